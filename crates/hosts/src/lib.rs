//! Many hosts in one run. An agent ([`agent`]) runs the executor on a client host and
//! hands out its finished seconds; the coordinator ([`coordinator`]) reaches the agents
//! (over ssh, [`ssh`], or to agents already listening), aligns their clocks ([`clock`]),
//! starts them at one instant and writes every host's seconds into one results file. The
//! calls between them are in [`messages`]; the plan each host runs is [`plan::host_plan`].
//! See docs/hosts.md.

pub mod agent;
pub mod clock;
pub mod coordinator;
pub mod messages;
pub mod plan;
mod probe_calls;
pub mod remote_probe;
pub mod ssh;

pub use coordinator::{coordinate, CoordError, Coordinate, Outcome};
