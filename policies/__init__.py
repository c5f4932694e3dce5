"""Reference-point policy specifications (TOML), installed as insdel.policy_specs."""
