"""horovod.common, as far as scripts reach into it (exceptions, elastic)."""
