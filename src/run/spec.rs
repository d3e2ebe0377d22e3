//! `RunSpec`: everything one simulation needs, as data that serialises to
//! JSON and back unchanged. The CLI builds one from its arguments (reading
//! the job files, includes and environment variables the job names), the
//! JSON result carries it in `elevator.spec`, and `elevator run --spec`
//! takes either a spec or such a result, so any result can be re-run.

use crate::machine::Machine;
use crate::sim::time::Ns;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// fio's default random seed (FIO_RANDSEED in fio.h).
pub const DEFAULT_SEED: u64 = 0xb189_9bed;

/// The job: fio's arguments and what they read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobSource {
    /// fio's arguments: job file names and command-line job options
    /// (`--name=x --rw=randread ...`), in order, as fio takes them.
    pub args: Vec<String>,
    /// The text of every job and include file the arguments read, by the
    /// path as named (`-` is standard input).
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// Environment variables the job files expanded (`${NAME}`), as read.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

impl JobSource {
    /// One job file given as text under `name`.
    pub fn text(name: &str, text: &str) -> JobSource {
        JobSource {
            args: vec![name.to_string()],
            files: BTreeMap::from([(name.to_string(), text.to_string())]),
            env: BTreeMap::new(),
        }
    }
    /// fio command-line job options only (no files).
    pub fn args(args: &[&str]) -> JobSource {
        JobSource {
            args: args.iter().map(|a| a.to_string()).collect(),
            ..JobSource::default()
        }
    }
}

/// The device: the profile's name and its TOML (built-in or a file's).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceSource {
    /// A built-in profile name or the file it was read from.
    pub name: String,
    /// The profile text; None means the built-in profile `name` of this
    /// version of elevator.
    #[serde(default)]
    pub profile: Option<String>,
}

/// One `--set NAME=VALUE`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Setting {
    pub name: String,
    pub value: String,
}

/// One `--switch TIME=SCHEDULER`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Switch {
    pub at_ns: Ns,
    pub scheduler: String,
}

/// Everything a simulation run needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    pub job: JobSource,
    pub device: DeviceSource,
    /// The scheduler at the start (`queue/scheduler`).
    pub scheduler: String,
    /// Settings in the order given: queue knobs (`nr_requests`, ...),
    /// scheduler tunables (`iosched/NAME`), CPU costs (`cpu/NAME`), cgroup
    /// files (`cgroup:PATH/FILE`).
    #[serde(default)]
    pub settings: Vec<Setting>,
    /// Scheduler switches, in time order.
    #[serde(default)]
    pub switches: Vec<Switch>,
    #[serde(default)]
    pub machine: Machine,
    /// cgroup interface: 1 (blkio, the default) or 2 (io).
    #[serde(default = "default_cgroup_version")]
    pub cgroup_version: u8,
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Caps every job's simulated time.
    #[serde(default)]
    pub max_runtime_ns: Option<Ns>,
    /// Where jobs that ask for logs (`write_lat_log`, ...) write them; a
    /// job asking for logs without one is an error.
    #[serde(default)]
    pub log_dir: Option<String>,
    /// Seconds since the epoch printed as fio's timestamps (0 for
    /// byte-identical output across runs).
    #[serde(default)]
    pub timestamp: u64,
    /// `--kernel VERSION`: the block layer of that kernel (crate::kernel).
    /// None: the newest kernel, with the legacy schedulers still allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// `--mount ext4:OPTIONS`: the jobs' files are on an ext4 file system
    /// on the device, mounted with OPTIONS (`mount -o` syntax; fs/ext4.rs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount: Option<String>,
    /// `--dm crypt[:sector_ns=N,bio_ns=N]`: the device is behind dm-crypt
    /// (task/kcryptd.rs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dm: Option<String>,
    /// Keep the first N requests the driver takes (`block_rq_issue`) in
    /// the report (`elevator.requests`); 0 keeps none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub trace_requests: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn default_cgroup_version() -> u8 {
    1
}
fn default_seed() -> u64 {
    DEFAULT_SEED
}

impl RunSpec {
    /// A run of `job` on the built-in `nvme` profile without a scheduler,
    /// with every other field at its default.
    pub fn new(job: JobSource) -> RunSpec {
        RunSpec {
            job,
            device: DeviceSource {
                name: "nvme".into(),
                profile: None,
            },
            scheduler: "none".into(),
            settings: Vec::new(),
            switches: Vec::new(),
            machine: Machine::default(),
            cgroup_version: 1,
            seed: DEFAULT_SEED,
            max_runtime_ns: None,
            log_dir: None,
            timestamp: 0,
            kernel: None,
            mount: None,
            dm: None,
            trace_requests: 0,
        }
    }

    /// A run of one job file given as text.
    pub fn from_text(name: &str, text: &str) -> RunSpec {
        RunSpec::new(JobSource::text(name, text))
    }

    pub fn scheduler(mut self, name: &str) -> RunSpec {
        self.scheduler = name.to_string();
        self
    }

    /// A built-in profile by name.
    pub fn device(mut self, name: &str) -> RunSpec {
        self.device = DeviceSource {
            name: name.to_string(),
            profile: None,
        };
        self
    }

    pub fn set(mut self, name: &str, value: &str) -> RunSpec {
        self.settings.push(Setting {
            name: name.to_string(),
            value: value.to_string(),
        });
        self
    }

    pub fn cpus(mut self, cpus: u32) -> RunSpec {
        self.machine.cpus = cpus;
        self
    }

    pub fn seed(mut self, seed: u64) -> RunSpec {
        self.seed = seed;
        self
    }

    /// The block layer of kernel `version` (`--kernel`).
    pub fn kernel(mut self, version: &str) -> RunSpec {
        self.kernel = Some(version.to_string());
        self
    }

    /// The jobs' files on a file system (`--mount ext4:OPTIONS`).
    pub fn mount(mut self, text: &str) -> RunSpec {
        self.mount = Some(text.to_string());
        self
    }

    /// The device behind dm-crypt (`--dm crypt[:COSTS]`).
    pub fn dm(mut self, text: &str) -> RunSpec {
        self.dm = Some(text.to_string());
        self
    }

    /// Trace the first `n` issued requests.
    pub fn trace(mut self, n: u32) -> RunSpec {
        self.trace_requests = n;
        self
    }

    pub fn max_runtime(mut self, ns: Ns) -> RunSpec {
        self.max_runtime_ns = Some(ns);
        self
    }

    pub fn switch(mut self, at_ns: Ns, scheduler: &str) -> RunSpec {
        self.switches.push(Switch {
            at_ns,
            scheduler: scheduler.to_string(),
        });
        self.switches.sort_by_key(|s| s.at_ns);
        self
    }

    /// The spec as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a RunSpec always serialises")
    }

    /// A spec from JSON: a spec itself, or a fio JSON result of elevator
    /// whose `elevator.spec` holds one.
    pub fn from_json(text: &str) -> Result<RunSpec, String> {
        let v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let spec = match v.get("elevator") {
            Some(meta) => meta.get("spec").cloned().ok_or(
                "a fio JSON result without elevator.spec (made by the lab, or by an elevator older than 0.2)",
            )?,
            None => v,
        };
        serde_json::from_value(spec).map_err(|e| format!("not a run spec: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trip_is_exact() {
        let mut s = RunSpec::from_text("a.fio", "[a]\nrw=read\n")
            .scheduler("mq-deadline")
            .device("hdd")
            .set("nr_requests", "64")
            .set("cgroup:a/blkio.weight", "200")
            .switch(5, "none")
            .seed(u64::MAX)
            .max_runtime(3);
        s.machine.cpu_speed = 1.234_567_890_123_4;
        s.job.env.insert("X".into(), "y".into());
        let back = RunSpec::from_json(&s.to_json()).unwrap();
        assert_eq!(back, s);
        assert_eq!(back.to_json(), s.to_json());
    }

    #[test]
    fn a_result_or_a_spec_is_accepted_and_junk_is_not() {
        let s = RunSpec::from_text("a.fio", "[a]\n");
        let result = format!(
            "{{\"fio version\": \"x\", \"elevator\": {{\"spec\": {}}}}}",
            s.to_json()
        );
        assert_eq!(RunSpec::from_json(&result).unwrap(), s);
        assert!(RunSpec::from_json("{\"elevator\": {}}")
            .unwrap_err()
            .contains("elevator.spec"));
        assert!(RunSpec::from_json("[1]")
            .unwrap_err()
            .contains("not a run spec"));
        assert!(RunSpec::from_json("{").unwrap_err().contains("not JSON"));
        let unknown = s.to_json().replacen('{', "{\"bogus\": 1,", 1);
        assert!(RunSpec::from_json(&unknown).unwrap_err().contains("bogus"));
    }

    #[test]
    fn minimal_spec_takes_defaults() {
        let s = RunSpec::from_json(
            r#"{"job": {"args": ["--name=a", "--rw=read"]}, "device": {"name": "ram"}, "scheduler": "none"}"#,
        )
        .unwrap();
        assert_eq!(s.seed, DEFAULT_SEED);
        assert_eq!(s.machine, Machine::default());
        assert_eq!(s.cgroup_version, 1);
    }
}
