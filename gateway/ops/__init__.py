"""Operations: the corvid command line, doctor and its probes, status, the control socket, logs."""
