"""The railgauge command line: one thin module per verb."""
