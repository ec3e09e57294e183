"""scikit-learn's estimator checks (the API contract: cloning, validation, pickling, clustering)."""
from sklearn.utils.estimator_checks import parametrize_with_checks

from meanshift import MeanShift


@parametrize_with_checks([MeanShift(), MeanShift(bin_seeding=False, cutoff=None)])
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
