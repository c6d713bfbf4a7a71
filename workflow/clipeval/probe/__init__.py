"""The linear probe: logistic regression on frozen image features, fitted on a train split and scored on a test
split, with few-shot draws."""
