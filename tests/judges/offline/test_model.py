"""The trees walk flat node arrays; the result is the plain walk of each tree, leaf by leaf."""

from __future__ import annotations

import random

from hallumeasure.judges.offline.model import BoostedTrees, Tree, load_model


def _walk(tree: Tree, row: list[float]) -> float:
    node = 0
    while tree.left[node] != -1:
        node = tree.left[node] if row[tree.feature[node]] <= tree.threshold[node] else tree.right[node]
    return tree.value[node]


def test_logits_are_the_sum_of_each_trees_leaf():
    model = load_model().response
    rng = random.Random(3)
    thresholds = [t for tree in model.trees for t in tree.threshold]
    rows = [
        [rng.choice([0.0, 1.0, rng.random() * 3, rng.choice(thresholds)]) for _ in model.features] for _ in range(40)
    ]
    for row, logit in zip(rows, model.logits(rows).tolist(), strict=True):
        leaves = [_walk(tree, row) for tree in model.trees]
        assert abs(logit - (model.init + sum(leaves))) < 1e-9


def test_a_single_leaf_and_no_tree_at_all():
    leaf = Tree(left=(-1,), right=(-1,), feature=(0,), threshold=(0.0,), value=(0.25,))
    stump = Tree(left=(1, -1, -1), right=(2, -1, -1), feature=(1, 0, 0), threshold=(0.5, 0.0, 0.0), value=(0, -1, 1))
    trees = BoostedTrees(features=("a", "b"), init=0.5, trees=(leaf, stump))
    assert trees.logits([[0.0, 0.0], [0.0, 1.0]]).tolist() == [0.5 + 0.25 - 1, 0.5 + 0.25 + 1]
    assert BoostedTrees(features=("a",), init=0.5, trees=()).logits([[1.0]]).tolist() == [0.5]
