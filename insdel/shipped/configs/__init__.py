"""The shipped experiment configurations (TOML): ``insdel configs list``, read by insdel.config."""
