"""Pure configuration, rendering and planning for the namespace migration, down to every component's Args
(migration.args); components/ turns those into resources."""
