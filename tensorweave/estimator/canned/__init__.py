"""tf.estimator's premade Estimators (estimator/canned/*.py): their heads, optimizers and model_fns."""
