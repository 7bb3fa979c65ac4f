"""The boxes of the paper's generic attack game: prior, mechanism, attack, metric, bound."""
