"""Data shipped with the classifier: the labelled set used by benchmarks/classifier_accuracy.py."""
