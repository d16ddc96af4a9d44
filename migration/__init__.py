"""Pure configuration, rendering and planning for the namespace migration, plus the components that apply it."""
