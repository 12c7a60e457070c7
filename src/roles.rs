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
