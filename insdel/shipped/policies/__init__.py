"""Reference-point policy specifications (TOML), installed as insdel.shipped.policies."""
