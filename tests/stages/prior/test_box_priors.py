"""Uniform and Zipf priors: validation, sampling, the Zipf maximum-likelihood fit, data files."""
import numpy as np
import pytest

from stages.metric import Exact, Within
from stages.prior.base import DATA_ENV, Prior, data_path, validate_probabilities
from stages.prior.uniform import UniformPrior
from stages.prior.zipf import ZipfPrior, fit_zipf_exponent, read_counts, zipf_probabilities

RockYou9 = "passwords/rockyou-top100k-9digit-withcount.csv"


def test_uniform_prior():
    prior = UniformPrior(n_targets=4, domain_size=5)
    assert prior.probabilities.shape == (4, 5) and prior.n_targets == 4 and prior.domain_size == 5
    assert prior.success_probability(prior.a_priori_guess(Exact(), 2), Exact()) == pytest.approx([0.4] * 4)
    assert prior.success_probability(np.zeros((4, 1), int), Within(1)) == pytest.approx([0.4] * 4)


def test_sample_frequencies_match_probabilities():
    prior = Prior(np.array([[0.7, 0.2, 0.1], [0.0, 0.0, 1.0]]))
    rng = np.random.default_rng(0)
    draws = np.stack([prior.sample(rng) for _ in range(20000)])
    assert np.all(draws[:, 1] == 2)
    freq = np.bincount(draws[:, 0], minlength=3) / draws.shape[0]
    assert np.all(np.abs(freq - [0.7, 0.2, 0.1]) < 4 * np.sqrt(0.25 / 20000))
    with pytest.raises(ValueError, match="n must equal"):
        prior.sample(rng, 3)


@pytest.mark.parametrize(
    "probabilities, match",
    [
        ([[0.5, 0.6]], "row 0 must sum to 1"),
        ([[1.2, -0.2]], "probabilities must be a probability"),
        ([[np.nan, 1.0]], "probabilities must be a probability"),
        ([0.5, 0.5], "shape"),
    ],
)
def test_bad_probabilities_raise(probabilities, match):
    with pytest.raises(ValueError, match=match):
        validate_probabilities(probabilities)


@pytest.mark.parametrize(
    "kwargs, name",
    [({"n_targets": 0}, "n_targets"), ({"domain_size": 2.5}, "domain_size"), ({"exponent": -1.0}, "exponent")],
)
def test_bad_zipf_arguments_raise(kwargs, name):
    with pytest.raises(ValueError, match=name):
        ZipfPrior(**kwargs)
    if name != "exponent":
        with pytest.raises(ValueError, match=name):
            UniformPrior(**kwargs)


def test_zipf_probabilities_closed_form():
    expected = np.array([1, 1 / 4, 1 / 9]) / (1 + 1 / 4 + 1 / 9)
    assert zipf_probabilities(3, 2.0) == pytest.approx(expected)
    prior = ZipfPrior(n_targets=2, domain_size=3, exponent=2.0)
    assert prior.probabilities == pytest.approx(np.stack([expected, expected]))


def test_zipf_permutation_gives_each_target_a_permuted_row():
    prior = ZipfPrior(n_targets=50, domain_size=6, exponent=1.0, permutation_seed=3)
    by_rank = zipf_probabilities(6, 1.0)
    assert np.allclose(np.sort(prior.probabilities, axis=1)[:, ::-1], by_rank)
    assert len(set(np.argmax(prior.probabilities, axis=1).tolist())) > 1
    again = ZipfPrior(n_targets=50, domain_size=6, exponent=1.0, permutation_seed=3)
    assert np.array_equal(prior.probabilities, again.probabilities)


# Ranks come from sorting the sampled counts, which biases flat laws (s near 0) upwards; s >= 0.7 is safe.
@pytest.mark.parametrize("exponent", [0.7, 1.0, 1.5, 2.2])
def test_zipf_fit_recovers_a_known_exponent(exponent):
    rng = np.random.default_rng(7)
    ranks = rng.choice(200, size=200_000, p=zipf_probabilities(200, exponent))
    counts = np.bincount(ranks, minlength=200)
    rng.shuffle(counts)  # the fit sorts counts itself
    assert fit_zipf_exponent(counts) == pytest.approx(exponent, abs=0.02)


def test_zipf_fit_on_exact_expected_counts_is_exact():
    assert fit_zipf_exponent(1e6 * zipf_probabilities(50, 1.7)) == pytest.approx(1.7, abs=1e-8)


def test_zipf_counts_file(tmp_path, monkeypatch):
    counts = np.round(1e6 * zipf_probabilities(30, 1.2)).astype(int)
    (tmp_path / "c.csv").write_text("rank,password,count\n" + "".join(f"{i},{i}{i},{c}\n" for i, c in enumerate(counts)))
    (tmp_path / "c.txt").write_text("".join(f"  {c} pass word{i}\n" for i, c in enumerate(counts)))
    assert read_counts(tmp_path / "c.csv").tolist() == counts.tolist()
    assert read_counts(tmp_path / "c.txt").tolist() == counts.tolist()
    prior = ZipfPrior(n_targets=2, domain_size=4, counts_file="c.csv", data_dir=str(tmp_path))
    assert prior.exponent == pytest.approx(1.2, abs=1e-3)
    assert prior.params()["exponent"] == prior.exponent
    monkeypatch.setenv(DATA_ENV, str(tmp_path))
    assert ZipfPrior(counts_file="c.txt").exponent == pytest.approx(1.2, abs=1e-3)


def test_missing_data_file_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nope\.csv does not exist.*ADVBOUNDS_DATA"):
        ZipfPrior(counts_file="nope.csv", data_dir=str(tmp_path))


def test_rockyou_nine_digit_fit():
    try:
        path = data_path(RockYou9)
    except FileNotFoundError:
        pytest.skip("shared data not present")
    s = fit_zipf_exponent(read_counts(path))
    assert 1.0 < s < 3.0
    assert ZipfPrior(counts_file=RockYou9).exponent == pytest.approx(s)


@pytest.mark.parametrize("name, text, bad", [
    ("negative.csv", "count\n10\n-3\n1\n", "'-3'"),
    ("nan.csv", "count\n10\nnan\n1\n", "'nan'"),
    ("text.csv", "count\n10\nmany\n1\n", "'many'"),
    ("blank.csv", "password,count\nx,10\ny,\nz,1\n", "''"),
    ("negative.txt", "  10 alpha\n  -3 beta\n", "'-3'"),
    ("text.txt", "  10 alpha\nbeta gamma\n", "'beta'"),
])
def test_bad_counts_file_names_the_file_the_line_and_the_value(name, text, bad, tmp_path):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ValueError) as info:
        ZipfPrior(counts_file=name, data_dir=str(tmp_path))
    message = str(info.value)
    assert message.startswith("counts_file") and str(path) in message and bad in message and "line" in message, message
    assert "\n" not in message


@pytest.mark.parametrize("name, text", [("empty.csv", "count\n"), ("empty.txt", ""), ("headerless.csv", "")])
def test_empty_counts_file_is_refused(name, text, tmp_path):
    (tmp_path / name).write_text(text)
    with pytest.raises(ValueError, match="counts_file") as info:
        ZipfPrior(counts_file=name, data_dir=str(tmp_path))
    assert str(tmp_path / name) in str(info.value)


def test_counts_file_with_fewer_than_two_counts_names_the_file(tmp_path):
    (tmp_path / "one.csv").write_text("count\n7\n")
    with pytest.raises(ValueError, match="counts_file .*one.csv"):
        ZipfPrior(counts_file="one.csv", data_dir=str(tmp_path))


def test_zipf_prior_names_the_data_file_it_read(tmp_path):
    (tmp_path / "c.csv").write_text("count\n8\n4\n2\n")
    assert ZipfPrior(counts_file="c.csv", data_dir=str(tmp_path)).data_files() == [tmp_path / "c.csv"]
    assert ZipfPrior().data_files() == []
