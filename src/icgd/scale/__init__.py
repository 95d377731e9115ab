"""Work spread over processes and machines: a Ray (or process) pool (`distributed`) and sweeps of training
configs, each trial a resumable run directory (`sweep`)."""
