//! Device models behind one small trait, and the TOML profiles that configure
//! them. Built-in profiles live in `profiles/*.toml` and are compiled in.

pub mod hdd;
pub mod loopdev;
pub mod nvme;
pub mod profile;
pub mod ram;
pub mod sata_ssd;

use crate::block::driver::Device;

pub use profile::{builtin_profiles, load_profile, Profile};

/// Whether the profile's device sits behind libata (SATA NCQ: the `hdd`
/// and `sata-ssd` models), whose queue depth depends on the kernel era.
pub fn is_ata(profile: &Profile) -> bool {
    matches!(profile.model.as_str(), "hdd" | "sata-ssd")
}

/// Build the model a profile names.
pub fn build(profile: &Profile, seed: u64) -> Result<Box<dyn Device>, String> {
    match profile.model.as_str() {
        "ram" => Ok(Box::new(ram::Ram::new(profile)?)),
        "nvme" => Ok(Box::new(nvme::Nvme::new(profile, seed)?)),
        "hdd" => Ok(Box::new(hdd::Hdd::new(profile, seed)?)),
        "sata-ssd" => Ok(Box::new(sata_ssd::SataSsd::new(profile, seed)?)),
        "loop" => Ok(Box::new(loopdev::Loop::new(profile, seed)?)),
        other => Err(format!(
            "profile '{}': unknown model '{other}' (known: ram, nvme, hdd, sata-ssd, loop)",
            profile.name
        )),
    }
}
