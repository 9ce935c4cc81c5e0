"""A tiny inventory package: the sample project of Chimera's evaluation."""
