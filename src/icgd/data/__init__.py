"""Floor 1, files that become data: what installed packages ship (`packaged`), labelled text sets with fixed
splits (`text`) and real feature sets extracted offline and cached (`features`). The tasks read these;
nothing here reads a task."""
