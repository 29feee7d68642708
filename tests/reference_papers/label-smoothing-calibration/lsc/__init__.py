"""Reference reproduction: label smoothing and calibration of an MLP on MNIST."""
