//! API keys for OpenAI-compatible endpoints kept in the OS keyring (service
//! [`KEYRING_SERVICE`]), never in the workspace. The store is behind the
//! [`KeyStore`] trait: [`OsKeyStore`] is the OS keyring (Secret Service over
//! D-Bus in pure Rust on Linux, Keychain on macOS, Credential Manager on
//! Windows); [`MemoryKeyStore`] keeps keys in memory, for tests.

use std::collections::BTreeMap;
use std::sync::Mutex;

/// The keyring service name under which every endpoint key is stored.
pub const KEYRING_SERVICE: &str = "worldloom";

/// A place that holds API keys by account name.
///
/// Errors are one-line descriptions that never contain a key.
pub trait KeyStore: Send + Sync {
    /// The key stored for `account`, `None` when none is.
    ///
    /// # Errors
    /// When the store cannot be reached or read.
    fn get(&self, account: &str) -> Result<Option<String>, String>;
    /// Stores `key` for `account`, replacing any earlier key.
    ///
    /// # Errors
    /// When the store cannot be reached or written.
    fn set(&self, account: &str, key: &str) -> Result<(), String>;
    /// Removes the key of `account`; removing an absent key succeeds.
    ///
    /// # Errors
    /// When the store cannot be reached or written.
    fn delete(&self, account: &str) -> Result<(), String>;
}

/// The OS keyring through the `keyring` crate, service [`KEYRING_SERVICE`].
#[derive(Debug, Default, Clone, Copy)]
pub struct OsKeyStore;

impl OsKeyStore {
    fn entry(account: &str) -> Result<keyring::Entry, String> {
        keyring::Entry::new(KEYRING_SERVICE, account).map_err(|e| {
            // When the platform store could not start (no Secret Service on
            // the session bus, no session bus at all), say why.
            let why = match keyring::Entry::store_status() {
                Err(start) => start.to_string(),
                Ok(()) => e.to_string(),
            };
            format!(
                "the OS keyring is not available: {why}; name an environment variable for the key instead"
            )
        })
    }
}

impl KeyStore for OsKeyStore {
    fn get(&self, account: &str) -> Result<Option<String>, String> {
        match Self::entry(account)?.get_password() {
            Ok(key) => Ok(Some(key)),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(format!("cannot read the OS keyring: {e}")),
        }
    }

    fn set(&self, account: &str, key: &str) -> Result<(), String> {
        Self::entry(account)?
            .set_password(key)
            .map_err(|e| format!("cannot write the OS keyring: {e}"))
    }

    fn delete(&self, account: &str) -> Result<(), String> {
        match Self::entry(account)?.delete_credential() {
            Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
            Err(e) => Err(format!("cannot write the OS keyring: {e}")),
        }
    }
}

/// Keys in memory, lost when dropped (tests, and builds without a keyring).
#[derive(Debug, Default)]
pub struct MemoryKeyStore {
    keys: Mutex<BTreeMap<String, String>>,
}

impl MemoryKeyStore {
    fn keys(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, String>> {
        self.keys
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl KeyStore for MemoryKeyStore {
    fn get(&self, account: &str) -> Result<Option<String>, String> {
        Ok(self.keys().get(account).cloned())
    }

    fn set(&self, account: &str, key: &str) -> Result<(), String> {
        self.keys().insert(account.to_owned(), key.to_owned());
        Ok(())
    }

    fn delete(&self, account: &str) -> Result<(), String> {
        self.keys().remove(account);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `f` on its own thread; `None` when it has not answered within
    /// ten seconds (a keyring call that hangs must not hang the test run).
    fn within_10_s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(std::time::Duration::from_secs(10)).ok()
    }

    #[test]
    fn the_os_keyring_answers_or_fails_with_a_clear_error() {
        // Machines without a Secret Service (CI) get an error naming the
        // keyring; a desktop with one answers that the account is absent.
        const ACCOUNT: &str = "worldloom-test-account-never-stored-3f9a";
        let got = within_10_s(|| OsKeyStore.get(ACCOUNT)).expect("the keyring answered");
        match got {
            Ok(None) => {}
            Ok(Some(_)) => panic!("a key is stored for the test account"),
            Err(e) => {
                assert!(
                    e.starts_with("the OS keyring is not available")
                        || e.starts_with("cannot read the OS keyring"),
                    "{e}"
                );
                // Writing fails the same way, with the same kind of message.
                let set = within_10_s(|| OsKeyStore.set(ACCOUNT, "sk-never-written"))
                    .expect("the keyring answered");
                let e = set.expect_err("no keyring to write to");
                assert!(
                    e.starts_with("the OS keyring is not available")
                        || e.starts_with("cannot write the OS keyring"),
                    "{e}"
                );
                eprintln!("{e}");
            }
        }
    }
}
