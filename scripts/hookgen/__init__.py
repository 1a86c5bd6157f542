"""hookgen — the generator of hooks/gen/ (scripts/gen_hooks.py is its command line)."""
