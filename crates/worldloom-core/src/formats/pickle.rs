//! A restricted reader of Python pickles (protocols 0–5; Python 3 writes
//! 2–5) that executes nothing and imports nothing.
//!
//! The pickle's opcodes are interpreted into plain values: `None`, booleans,
//! integers, floats, strings, bytes, lists, tuples, dicts and sets. Nothing
//! the pickle names is ever looked up or called: a `GLOBAL`/`STACK_GLOBAL`
//! is kept as the name it gives, and `REDUCE`, `NEWOBJ`, `NEWOBJ_EX`,
//! `INST`, `OBJ` and `BUILD` make an inert record of the class or function
//! named, with the arguments and state the pickle gives it. A record shows
//! as `"<module>.<Class> (class not available)"`, so a `__reduce__` that
//! would call `os.system` becomes a record named `posix.system` holding the
//! command as an argument, and a NumPy array becomes a record whose raw data
//! is never decoded. A few builtins are rebuilt as what they stand for:
//! `set`/`frozenset`, `collections.OrderedDict`/`defaultdict` (dicts),
//! `bytearray`, `_codecs.encode` (bytes written by protocol 2) and
//! `copyreg._reconstructor` (a record of the class it names).
//!
//! Memory stays bounded ([`Limits`]): the decompressed size, the stack, the
//! memo, the number of stored values and, when converting to JSON, the
//! nesting depth and the output size all have caps; going past one is an
//! error. Out-of-band buffers, persistent ids and the extension registry,
//! which refer to objects outside the pickle, are errors too.

use std::collections::HashMap;
use std::fmt;
use std::io::Read;
use std::rc::Rc;

use serde_json::{Map, Value};

use opcodes::op_name;

mod opcodes;
#[cfg(test)]
mod tests;
mod values;

/// Caps on what reading one pickle may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest pickle read, in bytes (after gzip decompression).
    pub max_bytes: usize,
    /// The most values on the stack (marks included).
    pub max_stack: usize,
    /// The most memo entries.
    pub max_memo: usize,
    /// The most values stored in containers, records and the memo, together.
    pub max_cells: usize,
    /// The deepest nesting converted to JSON.
    pub max_depth: usize,
    /// The most JSON output, counted as one per value plus string bytes.
    pub max_output: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_bytes: 256 << 20,
            max_stack: 1 << 20,
            max_memo: 1 << 20,
            max_cells: 8 << 20,
            max_depth: 200,
            max_output: 512 << 20,
        }
    }
}

/// Why a pickle could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PickleError {
    /// The byte offset of the opcode that failed, in the decompressed
    /// pickle; `None` for errors outside the opcode stream.
    pub offset: Option<usize>,
    /// The opcode that failed.
    pub opcode: Option<u8>,
    /// What went wrong.
    pub message: String,
}

impl fmt::Display for PickleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.offset, self.opcode) {
            (Some(at), Some(op)) => write!(
                f,
                "byte {at}, opcode {} (0x{op:02x}): {}",
                op_name(op),
                self.message
            ),
            (Some(at), None) => write!(f, "byte {at}: {}", self.message),
            _ => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for PickleError {}

fn plain_error(message: impl Into<String>) -> PickleError {
    PickleError {
        offset: None,
        opcode: None,
        message: message.into(),
    }
}

/// One value read from a pickle. Containers and records live in the
/// [`Pickle`] and are referred to by index, so that a value the pickle
/// shares (through its memo) is one value, as in Python.
#[derive(Debug, Clone, PartialEq)]
pub enum PyValue {
    /// `None`.
    None,
    /// `True` / `False`.
    Bool(bool),
    /// An integer that fits in 64 bits.
    Int(i64),
    /// A larger integer, as its little-endian two's-complement bytes.
    BigInt(Rc<[u8]>),
    /// A float.
    Float(f64),
    /// A string.
    Str(Rc<str>),
    /// Bytes (also `bytearray`).
    Bytes(Rc<[u8]>),
    /// A module-level name (class or function), never looked up.
    Global(Rc<(String, String)>),
    /// A list, tuple, dict, set or record of the [`Pickle`].
    Ref(usize),
}

/// A container or record of a [`Pickle`].
#[derive(Debug, Clone, PartialEq)]
enum Obj {
    List(Vec<PyValue>),
    Tuple(Vec<PyValue>),
    Dict(Vec<(PyValue, PyValue)>),
    Set(Vec<PyValue>),
    Record(Box<Record>),
}

/// An inert record of an object of a class the reader does not have.
#[derive(Debug, Clone, PartialEq, Default)]
struct Record {
    /// `(module, name)` of the class or function; `None` when the callable
    /// was itself built in the pickle.
    class: Option<(String, String)>,
    args: Vec<PyValue>,
    kwargs: Option<PyValue>,
    state: Option<PyValue>,
    items: Vec<PyValue>,
    entries: Vec<(PyValue, PyValue)>,
}

/// A pickle read into inert values.
#[derive(Debug, Clone, PartialEq)]
pub struct Pickle {
    heap: Vec<Obj>,
    root: PyValue,
    limits: Limits,
}

/// Reads a pickle, gzip-compressed or not, from `reader`, decompressing at
/// most [`Limits::max_bytes`].
///
/// # Errors
/// A [`PickleError`] for a gzip stream that does not decompress, a pickle
/// larger than the cap, or any error of [`load`].
pub fn load_reader(reader: impl Read, limits: &Limits) -> Result<Pickle, PickleError> {
    let mut reader = std::io::BufReader::new(reader);
    let head = std::io::BufRead::fill_buf(&mut reader)
        .map_err(|e| plain_error(format!("cannot read: {e}")))?;
    let gzip = head.starts_with(&[0x1f, 0x8b]);
    let mut bytes = Vec::new();
    let cap = limits.max_bytes as u64 + 1;
    let read = if gzip {
        flate2::read::GzDecoder::new(reader)
            .take(cap)
            .read_to_end(&mut bytes)
    } else {
        reader.take(cap).read_to_end(&mut bytes)
    };
    read.map_err(|e| {
        plain_error(format!(
            "{}: {e}",
            if gzip {
                "the gzip stream does not decompress (cut short or corrupt?)"
            } else {
                "cannot read"
            }
        ))
    })?;
    if bytes.len() > limits.max_bytes {
        return Err(plain_error(format!(
            "the pickle is larger than {} bytes{}, the most this reader holds",
            limits.max_bytes,
            if gzip { " once decompressed" } else { "" }
        )));
    }
    load(&bytes, limits)
}

/// Reads one pickle from `data` (uncompressed).
///
/// # Errors
/// A [`PickleError`] with the offset and opcode for an unknown opcode, data
/// cut short, a stack or memo misuse, a cap of `limits` passed, or an
/// opcode that refers outside the pickle (buffers, persistent ids,
/// extension codes).
pub fn load(data: &[u8], limits: &Limits) -> Result<Pickle, PickleError> {
    if data.len() > limits.max_bytes {
        return Err(plain_error(format!(
            "the pickle is larger than {} bytes, the most this reader holds",
            limits.max_bytes
        )));
    }
    let mut m = Machine {
        data,
        pos: 0,
        op_at: 0,
        op: None,
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::new(),
        heap: Vec::new(),
        cells: 0,
        limits: *limits,
    };
    let root = m.run().map_err(|message| PickleError {
        offset: Some(m.op_at),
        opcode: m.op,
        message,
    })?;
    Ok(Pickle {
        heap: m.heap,
        root,
        limits: *limits,
    })
}

struct Machine<'a> {
    data: &'a [u8],
    pos: usize,
    op_at: usize,
    op: Option<u8>,
    stack: Vec<PyValue>,
    marks: Vec<usize>,
    memo: HashMap<u64, PyValue>,
    heap: Vec<Obj>,
    cells: usize,
    limits: Limits,
}

type Step<T> = Result<T, String>;

impl Machine<'_> {
    fn take(&mut self, n: usize) -> Step<&[u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.data.len())
            .ok_or_else(|| {
                format!(
                    "the pickle ends early ({n} bytes wanted, {} left)",
                    self.data.len() - self.pos
                )
            })?;
        let out = &self.data[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn uint(&mut self, n: usize) -> Step<u64> {
        let bytes = self.take(n)?;
        Ok(bytes
            .iter()
            .rev()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    fn length(&mut self, n: usize) -> Step<usize> {
        let len = self.uint(n)?;
        usize::try_from(len)
            .ok()
            .filter(|&l| l <= self.data.len() - self.pos)
            .ok_or_else(|| {
                format!(
                    "a length of {len} bytes runs past the end ({} left)",
                    self.data.len() - self.pos
                )
            })
    }

    fn line(&mut self) -> Step<&[u8]> {
        let rest = &self.data[self.pos..];
        let n = rest
            .iter()
            .position(|&b| b == b'\n')
            .ok_or("a text argument has no end of line")?;
        let out = &self.data[self.pos..self.pos + n];
        self.pos += n + 1;
        Ok(out)
    }

    fn line_str(&mut self) -> Step<String> {
        Ok(String::from_utf8_lossy(self.line()?).into_owned())
    }

    fn add_cells(&mut self, n: usize) -> Step<()> {
        self.cells += n;
        if self.cells > self.limits.max_cells {
            return Err(format!(
                "more than {} values stored, the most this reader holds",
                self.limits.max_cells
            ));
        }
        Ok(())
    }

    fn push(&mut self, v: PyValue) -> Step<()> {
        if self.stack.len() + self.marks.len() >= self.limits.max_stack {
            return Err(format!(
                "the stack grows past {} entries, the most this reader holds",
                self.limits.max_stack
            ));
        }
        self.stack.push(v);
        Ok(())
    }

    fn new_obj(&mut self, obj: Obj) -> Step<PyValue> {
        let n = match &obj {
            Obj::List(v) | Obj::Tuple(v) | Obj::Set(v) => v.len(),
            Obj::Dict(v) => v.len() * 2,
            Obj::Record(r) => r.args.len() + 2,
        };
        self.add_cells(n + 1)?;
        self.heap.push(obj);
        Ok(PyValue::Ref(self.heap.len() - 1))
    }

    fn pop(&mut self) -> Step<PyValue> {
        if self.marks.last().is_some_and(|&m| m >= self.stack.len()) {
            return Err("the stack is empty down to a mark".into());
        }
        self.stack.pop().ok_or_else(|| "the stack is empty".into())
    }

    fn top(&self) -> Step<&PyValue> {
        self.stack.last().ok_or_else(|| "the stack is empty".into())
    }

    fn pop_mark(&mut self) -> Step<Vec<PyValue>> {
        let mark = self.marks.pop().ok_or("no mark on the stack")?;
        if mark > self.stack.len() {
            return Err("a mark above the stack".into());
        }
        Ok(self.stack.split_off(mark))
    }

    fn obj_mut(&mut self, v: &PyValue) -> Step<&mut Obj> {
        match v {
            PyValue::Ref(i) => Ok(&mut self.heap[*i]),
            other => Err(format!("expected a container, found {}", kind(other))),
        }
    }

    fn tuple_items(&self, v: &PyValue) -> Step<Vec<PyValue>> {
        match v {
            PyValue::Ref(i) => match &self.heap[*i] {
                Obj::Tuple(items) | Obj::List(items) => Ok(items.clone()),
                _ => Err("expected a tuple of arguments".into()),
            },
            other => Err(format!(
                "expected a tuple of arguments, found {}",
                kind(other)
            )),
        }
    }

    fn memo_put(&mut self, key: u64) -> Step<()> {
        let v = self.top()?.clone();
        if !self.memo.contains_key(&key) && self.memo.len() >= self.limits.max_memo {
            return Err(format!(
                "the memo grows past {} entries, the most this reader holds",
                self.limits.max_memo
            ));
        }
        self.add_cells(1)?;
        self.memo.insert(key, v);
        Ok(())
    }

    fn memo_get(&mut self, key: u64) -> Step<()> {
        let v = self
            .memo
            .get(&key)
            .cloned()
            .ok_or_else(|| format!("memo entry {key} was never stored"))?;
        self.push(v)
    }

    fn append(&mut self, target: &PyValue, items: Vec<PyValue>) -> Step<()> {
        self.add_cells(items.len())?;
        match self.obj_mut(target)? {
            Obj::List(v) | Obj::Set(v) => v.extend(items),
            Obj::Record(r) => r.items.extend(items),
            _ => return Err("appending to something that is not a list".into()),
        }
        Ok(())
    }

    fn set_items(&mut self, target: &PyValue, flat: Vec<PyValue>) -> Step<()> {
        if !flat.len().is_multiple_of(2) {
            return Err("an odd number of keys and values".into());
        }
        self.add_cells(flat.len())?;
        let mut pairs = Vec::with_capacity(flat.len() / 2);
        let mut it = flat.into_iter();
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            pairs.push((k, v));
        }
        match self.obj_mut(target)? {
            Obj::Dict(d) => {
                for (k, v) in pairs {
                    match d.iter_mut().rev().find(|(old, _)| *old == k && is_key(&k)) {
                        Some(slot) => slot.1 = v,
                        None => d.push((k, v)),
                    }
                }
            }
            Obj::Record(r) => r.entries.extend(pairs),
            _ => return Err("setting items on something that is not a dict".into()),
        }
        Ok(())
    }

    fn record(&mut self, class: &PyValue, args: Vec<PyValue>) -> Step<PyValue> {
        let class = match class {
            PyValue::Global(g) => Some((g.0.clone(), g.1.clone())),
            _ => None,
        };
        self.new_obj(Obj::Record(Box::new(Record {
            class,
            args,
            ..Record::default()
        })))
    }

    /// `REDUCE`: a call, made into a value only for a few builtins and
    /// otherwise into an inert record.
    fn reduce(&mut self, callable: PyValue, args: Vec<PyValue>) -> Step<PyValue> {
        let PyValue::Global(g) = &callable else {
            return self.record(&callable, args);
        };
        let (module, name) = (g.0.as_str(), g.1.as_str());
        let builtin = matches!(module, "builtins" | "__builtin__");
        match (module, name) {
            (_, "set" | "frozenset") if builtin => {
                let items = match args.first() {
                    Some(v @ PyValue::Ref(_)) => self.tuple_items(v)?,
                    _ => Vec::new(),
                };
                self.new_obj(Obj::Set(items))
            }
            (_, "bytearray" | "bytes") if builtin => match args.first() {
                Some(PyValue::Bytes(b)) => Ok(PyValue::Bytes(b.clone())),
                None => Ok(PyValue::Bytes(Rc::from(&[][..]))),
                _ => self.record(&callable, args),
            },
            ("_codecs", "encode") => match args.first() {
                // Protocol 2 writes bytes as `_codecs.encode(text, "latin1")`.
                Some(PyValue::Str(s)) => Ok(PyValue::Bytes(
                    s.chars()
                        .map(|c| u8::try_from(u32::from(c)).unwrap_or(b'?'))
                        .collect(),
                )),
                _ => self.record(&callable, args),
            },
            ("collections", "OrderedDict" | "defaultdict") => {
                let mut dict = Vec::new();
                if name == "OrderedDict"
                    && let Some(v @ PyValue::Ref(_)) = args.first()
                {
                    for pair in self.tuple_items(v)? {
                        if let [k, v] = self.tuple_items(&pair)?.as_slice() {
                            dict.push((k.clone(), v.clone()));
                        }
                    }
                }
                self.new_obj(Obj::Dict(dict))
            }
            ("copyreg" | "copy_reg", "_reconstructor") => {
                // (class, base, state): an object of `class`.
                let class = args.first().cloned().unwrap_or(PyValue::None);
                let state = args.get(2).cloned().filter(|s| *s != PyValue::None);
                let r = self.record(&class, Vec::new())?;
                if let (Some(state), Obj::Record(rec)) = (state, self.obj_mut(&r)?) {
                    rec.state = Some(state);
                }
                Ok(r)
            }
            ("copyreg" | "copy_reg", "__newobj__" | "__newobj_ex__")
            | ("numpy.core.multiarray" | "numpy._core.multiarray", "_reconstruct") => {
                // (class, *args): an object of `class`.
                let mut args = args;
                let class = if args.is_empty() {
                    PyValue::None
                } else {
                    args.remove(0)
                };
                self.record(&class, args)
            }
            _ => self.record(&callable, args),
        }
    }

    fn build(&mut self, target: &PyValue, state: PyValue) -> Step<()> {
        if let PyValue::Ref(i) = target
            && let Obj::Record(r) = &mut self.heap[*i]
        {
            r.state = Some(state);
        }
        // Other values (a dict subclass rebuilt as a dict) keep what they
        // hold; the state of a builtin adds nothing this reader shows.
        Ok(())
    }

    fn run(&mut self) -> Step<PyValue> {
        loop {
            self.op_at = self.pos;
            self.op = None;
            let op = *self
                .data
                .get(self.pos)
                .ok_or("the pickle ends without a STOP opcode (cut short?)")?;
            self.pos += 1;
            self.op = Some(op);
            match op {
                0x80 => {
                    let proto = self.uint(1)?;
                    if proto > 5 {
                        return Err(format!(
                            "protocol {proto} is newer than 5, the newest this reader knows"
                        ));
                    }
                }
                0x95 => {
                    self.uint(8)?;
                }
                b'.' => return self.pop(),
                b'(' => {
                    if self.stack.len() + self.marks.len() >= self.limits.max_stack {
                        return Err(format!(
                            "the stack grows past {} entries, the most this reader holds",
                            self.limits.max_stack
                        ));
                    }
                    self.marks.push(self.stack.len());
                }
                b'0' => {
                    if self.marks.last().is_some_and(|&m| m == self.stack.len()) {
                        self.marks.pop();
                    } else {
                        self.pop()?;
                    }
                }
                b'1' => {
                    self.pop_mark()?;
                }
                b'2' => {
                    let v = self.top()?.clone();
                    self.push(v)?;
                }
                b'N' => self.push(PyValue::None)?,
                0x88 => self.push(PyValue::Bool(true))?,
                0x89 => self.push(PyValue::Bool(false))?,
                b'J' => {
                    let v = self.uint(4)? as u32 as i32;
                    self.push(PyValue::Int(i64::from(v)))?;
                }
                b'K' => {
                    let v = self.uint(1)?;
                    self.push(PyValue::Int(v as i64))?;
                }
                b'M' => {
                    let v = self.uint(2)?;
                    self.push(PyValue::Int(v as i64))?;
                }
                0x8a | 0x8b => {
                    let n = if op == 0x8a {
                        self.length(1)?
                    } else {
                        self.length(4)?
                    };
                    let bytes = self.take(n)?.to_vec();
                    self.push(int_from_le(bytes))?;
                }
                b'I' | b'L' => {
                    let text = self.line_str()?;
                    let t = text.trim().trim_end_matches('L');
                    let v = match t {
                        "01" if op == b'I' => PyValue::Bool(true),
                        "00" if op == b'I' => PyValue::Bool(false),
                        _ => match t.parse::<i64>() {
                            Ok(n) => PyValue::Int(n),
                            Err(_)
                                if !t.is_empty()
                                    && t.trim_start_matches('-')
                                        .bytes()
                                        .all(|b| b.is_ascii_digit()) =>
                            {
                                PyValue::Str(Rc::from(t))
                            }
                            Err(_) => return Err(format!("`{t}` is not an integer")),
                        },
                    };
                    self.push(v)?;
                }
                b'G' => {
                    let bytes = self.take(8)?;
                    let mut a = [0u8; 8];
                    a.copy_from_slice(bytes);
                    self.push(PyValue::Float(f64::from_be_bytes(a)))?;
                }
                b'F' => {
                    let text = self.line_str()?;
                    let v = text
                        .trim()
                        .parse::<f64>()
                        .map_err(|_| format!("`{}` is not a float", text.trim()))?;
                    self.push(PyValue::Float(v))?;
                }
                b'X' | 0x8c | 0x8d => {
                    let n = match op {
                        b'X' => self.length(4)?,
                        0x8c => self.length(1)?,
                        _ => self.length(8)?,
                    };
                    let s = String::from_utf8_lossy(self.take(n)?).into_owned();
                    self.push(PyValue::Str(Rc::from(s)))?;
                }
                b'T' | b'U' => {
                    // A Python 2 `str`: read as text.
                    let n = if op == b'T' {
                        self.length(4)?
                    } else {
                        self.length(1)?
                    };
                    let s = String::from_utf8_lossy(self.take(n)?).into_owned();
                    self.push(PyValue::Str(Rc::from(s)))?;
                }
                b'S' => {
                    let line = self.line()?.to_vec();
                    let s = unquote_repr(&line)?;
                    self.push(PyValue::Str(Rc::from(s)))?;
                }
                b'V' => {
                    let line = self.line()?.to_vec();
                    let s = raw_unicode_escape(&line);
                    self.push(PyValue::Str(Rc::from(s)))?;
                }
                b'B' | b'C' | 0x8e | 0x96 => {
                    let n = match op {
                        b'B' => self.length(4)?,
                        b'C' => self.length(1)?,
                        _ => self.length(8)?,
                    };
                    let b: Rc<[u8]> = Rc::from(self.take(n)?);
                    self.push(PyValue::Bytes(b))?;
                }
                b']' => {
                    let v = self.new_obj(Obj::List(Vec::new()))?;
                    self.push(v)?;
                }
                b'}' => {
                    let v = self.new_obj(Obj::Dict(Vec::new()))?;
                    self.push(v)?;
                }
                b')' => {
                    let v = self.new_obj(Obj::Tuple(Vec::new()))?;
                    self.push(v)?;
                }
                0x8f => {
                    let v = self.new_obj(Obj::Set(Vec::new()))?;
                    self.push(v)?;
                }
                b'l' => {
                    let items = self.pop_mark()?;
                    let v = self.new_obj(Obj::List(items))?;
                    self.push(v)?;
                }
                b't' => {
                    let items = self.pop_mark()?;
                    let v = self.new_obj(Obj::Tuple(items))?;
                    self.push(v)?;
                }
                0x91 => {
                    let items = self.pop_mark()?;
                    let v = self.new_obj(Obj::Set(items))?;
                    self.push(v)?;
                }
                0x85..=0x87 => {
                    let n = usize::from(op - 0x84);
                    if self.stack.len() < n
                        || self.marks.last().is_some_and(|&m| m > self.stack.len() - n)
                    {
                        return Err("the stack holds fewer values than the tuple takes".into());
                    }
                    let items = self.stack.split_off(self.stack.len() - n);
                    let v = self.new_obj(Obj::Tuple(items))?;
                    self.push(v)?;
                }
                b'd' => {
                    let flat = self.pop_mark()?;
                    let d = self.new_obj(Obj::Dict(Vec::new()))?;
                    self.set_items(&d, flat)?;
                    self.push(d)?;
                }
                b'a' => {
                    let item = self.pop()?;
                    let target = self.top()?.clone();
                    self.append(&target, vec![item])?;
                }
                b'e' => {
                    let items = self.pop_mark()?;
                    let target = self.top()?.clone();
                    self.append(&target, items)?;
                }
                0x90 => {
                    let items = self.pop_mark()?;
                    let target = self.top()?.clone();
                    self.append(&target, items)?;
                }
                b's' => {
                    let value = self.pop()?;
                    let key = self.pop()?;
                    let target = self.top()?.clone();
                    self.set_items(&target, vec![key, value])?;
                }
                b'u' => {
                    let flat = self.pop_mark()?;
                    let target = self.top()?.clone();
                    self.set_items(&target, flat)?;
                }
                b'g' => {
                    let key = self.line_str()?;
                    let key = key
                        .trim()
                        .parse::<u64>()
                        .map_err(|_| format!("`{key}` is not a memo key"))?;
                    self.memo_get(key)?;
                }
                b'h' => {
                    let key = self.uint(1)?;
                    self.memo_get(key)?;
                }
                b'j' => {
                    let key = self.uint(4)?;
                    self.memo_get(key)?;
                }
                b'p' => {
                    let key = self.line_str()?;
                    let key = key
                        .trim()
                        .parse::<u64>()
                        .map_err(|_| format!("`{key}` is not a memo key"))?;
                    self.memo_put(key)?;
                }
                b'q' => {
                    let key = self.uint(1)?;
                    self.memo_put(key)?;
                }
                b'r' => {
                    let key = self.uint(4)?;
                    self.memo_put(key)?;
                }
                0x94 => {
                    let key = self.memo.len() as u64;
                    self.memo_put(key)?;
                }
                b'c' => {
                    let module = self.line_str()?;
                    let name = self.line_str()?;
                    self.push(PyValue::Global(Rc::new((module, name))))?;
                }
                0x93 => {
                    let name = self.pop()?;
                    let module = self.pop()?;
                    match (module, name) {
                        (PyValue::Str(m), PyValue::Str(n)) => {
                            self.push(PyValue::Global(Rc::new((m.to_string(), n.to_string()))))?
                        }
                        _ => return Err("module and name are not strings".into()),
                    }
                }
                b'R' => {
                    let args = self.pop()?;
                    let callable = self.pop()?;
                    let args = self.tuple_items(&args)?;
                    let v = self.reduce(callable, args)?;
                    self.push(v)?;
                }
                0x81 => {
                    let args = self.pop()?;
                    let class = self.pop()?;
                    let args = self.tuple_items(&args)?;
                    let v = self.record(&class, args)?;
                    self.push(v)?;
                }
                0x92 => {
                    let kwargs = self.pop()?;
                    let args = self.pop()?;
                    let class = self.pop()?;
                    let args = self.tuple_items(&args)?;
                    let v = self.record(&class, args)?;
                    if let Obj::Record(r) = self.obj_mut(&v)? {
                        r.kwargs = Some(kwargs);
                    }
                    self.push(v)?;
                }
                b'i' => {
                    let module = self.line_str()?;
                    let name = self.line_str()?;
                    let args = self.pop_mark()?;
                    let class = PyValue::Global(Rc::new((module, name)));
                    let v = self.record(&class, args)?;
                    self.push(v)?;
                }
                b'o' => {
                    let mut items = self.pop_mark()?;
                    if items.is_empty() {
                        return Err("OBJ without a class".into());
                    }
                    let class = items.remove(0);
                    let v = self.record(&class, items)?;
                    self.push(v)?;
                }
                b'b' => {
                    let state = self.pop()?;
                    let target = self.top()?.clone();
                    self.build(&target, state)?;
                }
                0x98 => {}
                0x97 => {
                    return Err(
                        "an out-of-band buffer (protocol 5), which is not in the file".into(),
                    );
                }
                b'P' | b'Q' => {
                    return Err(
                        "a persistent id, which refers to an object outside the pickle".into(),
                    );
                }
                0x82..=0x84 => {
                    return Err(
                        "an extension-registry code, which refers to a class outside the pickle"
                            .into(),
                    );
                }
                _ => return Err("not a pickle opcode (a corrupt or non-pickle file?)".into()),
            }
        }
    }
}

fn kind(v: &PyValue) -> &'static str {
    match v {
        PyValue::None => "None",
        PyValue::Bool(_) => "a boolean",
        PyValue::Int(_) | PyValue::BigInt(_) => "an integer",
        PyValue::Float(_) => "a float",
        PyValue::Str(_) => "a string",
        PyValue::Bytes(_) => "bytes",
        PyValue::Global(_) => "a module-level name",
        PyValue::Ref(_) => "a container",
    }
}

/// Whether a value is compared by value as a dict key (scalars).
fn is_key(v: &PyValue) -> bool {
    !matches!(v, PyValue::Ref(_))
}

/// A little-endian two's-complement integer (`LONG1`/`LONG4`).
fn int_from_le(bytes: Vec<u8>) -> PyValue {
    if bytes.is_empty() {
        return PyValue::Int(0);
    }
    if bytes.len() <= 8 {
        let negative = bytes[bytes.len() - 1] & 0x80 != 0;
        let mut a = [if negative { 0xff } else { 0 }; 8];
        a[..bytes.len()].copy_from_slice(&bytes);
        return PyValue::Int(i64::from_le_bytes(a));
    }
    PyValue::BigInt(Rc::from(bytes))
}

/// The text of a protocol 0 `STRING` argument (a quoted Python repr).
fn unquote_repr(line: &[u8]) -> Step<String> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let inner = match line {
        [q, inner @ .., q2] if (*q == b'\'' || *q == b'"') && q == q2 => inner,
        _ => return Err("a STRING argument is not quoted".into()),
    };
    let mut out = Vec::with_capacity(inner.len());
    let mut i = 0;
    while i < inner.len() {
        let b = inner[i];
        i += 1;
        if b != b'\\' || i >= inner.len() {
            out.push(b);
            continue;
        }
        let e = inner[i];
        i += 1;
        match e {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'x' if i + 2 <= inner.len() => {
                let hex = std::str::from_utf8(&inner[i..i + 2]).unwrap_or("");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(b'?'));
                i += 2;
            }
            other => out.push(other),
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// The text of a protocol 0 `UNICODE` argument (raw-unicode-escape).
fn raw_unicode_escape(line: &[u8]) -> String {
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < line.len() {
        let b = line[i];
        let width = match line.get(i + 1) {
            Some(b'u') if b == b'\\' => 4,
            Some(b'U') if b == b'\\' => 8,
            _ => 0,
        };
        if width > 0
            && let Some(hex) = line.get(i + 2..i + 2 + width)
            && let Some(c) = std::str::from_utf8(hex)
                .ok()
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .map(|n| char::from_u32(n).unwrap_or('\u{fffd}'))
        {
            out.push(c);
            i += 2 + width;
            continue;
        }
        out.push(char::from(b));
        i += 1;
    }
    out
}

/// The label of an inert record: `"<module>.<Class> (class not available)"`.
pub fn record_label(module: &str, name: &str) -> String {
    format!("{module}.{name} (class not available)")
}
