//! `worldloom serve-env`: a world model served as an
//! [OpenEnv](https://github.com/meta-pytorch/OpenEnv) environment, so RL
//! trainers (TRL, SkyRL, ART, verifiers…) can run agents inside the
//! environments the model simulates, and every episode comes back to the
//! studio as a trajectory.
//!
//! - [`tasks`]: what an episode starts from (AgentWorldBench file or a
//!   workspace), picked by seed;
//! - [`episode`]: reset and step over one engine event stream, free-running,
//!   actions checked by `worldloom-core`'s parsers, terminal actions per
//!   domain, turn limit, perturbations;
//! - [`state`]: an episode as plain data (what rewards read);
//! - [`reward`]: pluggable rewards (none by default);
//! - [`record`]: each episode written into a workspace;
//! - [`server`]: the HTTP and WebSocket transports with `openenv-core`'s
//!   shapes, sessions, limits and the door;
//! - counters for `GET /metrics`: [`metrics`].
//!
//! `docs/openenv.md` describes the protocol and the observation fields.

pub mod episode;
pub mod error;
pub mod metrics;
pub mod record;
pub mod reward;
pub mod server;
pub mod state;
pub mod tasks;

pub use episode::{EnvConfig, Environment, Perturbations, ResetParams, StepAnswer};
pub use error::EnvError;
pub use record::{JUDGE_NOTE_HEADER, LIVE_EPISODE_TAG, Recorder};
pub use reward::{JudgeCall, LlmJudgeReward, Reward, RewardOutcome, TargetStateReward, ZeroReward};
pub use server::{RunningEnvServer, ServeEnvOptions, serve, spawn};
pub use state::Episode;
pub use tasks::{EPISODE_SOURCE_FORMAT, Task, TaskSet};
