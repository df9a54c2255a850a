//! The JSON a device model is built from (Python's `devices:` entries, compiled): one builder
//! per `model` string. Every size is in bytes, every rate in bytes per second.

use super::cache::{CacheSpec, Cached};
use super::hdd::{Hdd, HddSpec};
use super::raid::{Level, Raid};
use super::ssd::{Ssd, SsdSpec};
use super::throttle::{Throttle, ThrottleSpec};
use super::Model;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(tag = "model", rename_all = "lowercase")]
pub enum DeviceSpec {
    Hdd(HddSpec),
    Ssd(SsdSpec),
    Raid0(RaidSpec),
    Raid1(RaidSpec),
    Raid10(RaidSpec),
    Throttle(ThrottleSpec),
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RaidSpec {
    pub size: u64,
    /// Each member's own model (its size is the member's share of the array).
    pub member: Box<DeviceSpec>,
    pub disks: usize,
    #[serde(default = "default_stripe")]
    pub stripe: u64,
    /// The controller's cache in front of the set.
    #[serde(default)]
    pub cache: Option<CacheSpec>,
}

fn default_stripe() -> u64 {
    64 << 10
}

impl DeviceSpec {
    pub fn from_json(json: &str) -> Result<DeviceSpec, String> {
        let de = &mut serde_json::Deserializer::from_str(json);
        serde_path_to_error::deserialize(de).map_err(|e| format!("device model: {}: {}", e.path(), e.inner()))
    }

    /// Bytes the served file holds.
    pub fn size(&self) -> u64 {
        match self {
            DeviceSpec::Hdd(h) => h.size,
            DeviceSpec::Ssd(s) => s.size,
            DeviceSpec::Raid0(r) | DeviceSpec::Raid1(r) | DeviceSpec::Raid10(r) => r.size,
            DeviceSpec::Throttle(t) => t.size,
        }
    }

    pub fn build(&self) -> Result<Box<dyn Model>, String> {
        let with_cache = |m: Box<dyn Model>, c: &Option<CacheSpec>| -> Box<dyn Model> {
            match c {
                Some(c) => Box::new(Cached::new(m, c.clone())),
                None => m,
            }
        };
        Ok(match self {
            DeviceSpec::Hdd(h) => with_cache(Box::new(Hdd::new(h)?), &h.cache),
            DeviceSpec::Ssd(s) => Box::new(Ssd::new(s)?),
            DeviceSpec::Throttle(t) => Box::new(Throttle::new(t)?),
            DeviceSpec::Raid0(r) => raid(Level::Raid0, r, with_cache)?,
            DeviceSpec::Raid1(r) => raid(Level::Raid1, r, with_cache)?,
            DeviceSpec::Raid10(r) => raid(Level::Raid10, r, with_cache)?,
        })
    }
}

fn raid(
    level: Level,
    r: &RaidSpec,
    with_cache: impl Fn(Box<dyn Model>, &Option<CacheSpec>) -> Box<dyn Model>,
) -> Result<Box<dyn Model>, String> {
    level.check(r.disks)?;
    let members = (0..r.disks).map(|_| r.member.build()).collect::<Result<Vec<_>, _>>()?;
    Ok(with_cache(Box::new(Raid::new(level, r.stripe, members)?), &r.cache))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mirrored_pair_of_cached_disks_behind_a_battery_backed_controller_builds() {
        let json = r#"{"model": "raid1", "size": 1073741824, "disks": 2,
            "member": {"model": "hdd", "size": 1073741824, "rpm": 10000, "cache": {"mode": "off"}},
            "cache": {"mode": "battery-backed", "size": 268435456}}"#;
        let spec = DeviceSpec::from_json(json).unwrap();
        assert_eq!(spec.size(), 1 << 30);
        assert!(spec.build().is_ok());
    }

    #[test]
    fn a_wrong_field_is_named() {
        let err = DeviceSpec::from_json(r#"{"model": "ssd", "size": 1, "chanels": 8}"#).unwrap_err();
        assert!(err.contains("chanels"), "{err}");
        let err = DeviceSpec::from_json(r#"{"model": "hdd", "size": 1073741824, "avg_seek_ms": 20}"#)
            .unwrap()
            .build()
            .err()
            .unwrap();
        assert!(err.contains("full_stroke_ms"), "{err}");
    }
}
