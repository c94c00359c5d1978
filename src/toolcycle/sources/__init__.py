"""Tool sources: adapters that turn outside tools into `toolcycle.ToolInstance` objects."""
