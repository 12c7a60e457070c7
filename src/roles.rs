//! The cdnlab role binaries a topology node may name with `role = "..."`. Each is built from
//! `bins/` and installed beside the `cdnlab` executable.

/// Every role a topology may name.
pub const ROLES: &[&str] = &[
    "probe",
    "has-client",
    "ucs",
    "dcs",
    "urr",
    "drr",
    "cloud",
    "fdn",
    "fog-viewers",
];

#[cfg(test)]
mod tests {
    /// The container image carries every role (scripts/build-image.sh lists them by hand).
    #[test]
    fn the_image_carries_every_role() {
        let script = include_str!("../scripts/build-image.sh");
        let line = script
            .lines()
            .find(|l| l.starts_with("binaries=("))
            .expect("build-image.sh lists its binaries");
        let listed: Vec<&str> = line
            .trim_start_matches("binaries=(")
            .trim_end_matches(')')
            .split_whitespace()
            .collect();
        for role in super::ROLES {
            assert!(listed.contains(role), "build-image.sh misses role {role}");
        }
    }
}
