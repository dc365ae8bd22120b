"""Training the answer service's models on this machine (``attesta answer train-reader``).
Never imported by the running service: it needs torch, which the service's image lacks."""
