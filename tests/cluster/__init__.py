"""The project's test Slurm cluster (up.sh, down.sh) and its fabric's fault helpers (fabric.py)."""
