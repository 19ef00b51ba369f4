#!/usr/bin/env python3
"""train_split.py -- checks a rasp-train run directory's held-out test set
against the training samples as `rasp gen` writes them, independently of
rasp-train's own key: every question (the tokens, with the edge blocks --
or whole arms under --order arm -- as a set, and the answer) of
test_questions.jsonl is unseen in training and appears once; split.json's
counts agree with what this script counts.

usage: train_split.py TRAIN.jsonl RUNDIR ORDER MARKERS
Prints one line of counts; exit status 1 on a disagreement."""
import json
import sys


def question(sample, order, markers):
    tok = sample["tokens"]
    D, M = sample["D"], sample["M"]
    blk = 2 + markers
    g = sample["g_start"]
    E = D * (M - 1)
    if order == "arm":
        bl = (M - 1) * blk
        blocks = [tuple(tok[g + a * bl:g + (a + 1) * bl]) for a in range(D)]
    else:
        blocks = [tuple(tok[g + k * blk:g + (k + 1) * blk]) for k in range(E)]
    return (tuple(tok[:g]), tuple(sorted(blocks)), tuple(tok[g + E * blk:]))


def main():
    train_path, run, order, markers = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    with open(train_path) as f:
        train = {question(json.loads(l), order, markers) for l in f if l.strip()}
    with open(run + "/test_questions.jsonl") as f:
        test = [question(json.loads(l), order, markers) for l in f if l.strip()]
    with open(run + "/split.json") as f:
        split = json.load(f)
    seen = sum(q in train for q in test)
    repeats = len(test) - len(set(test))
    print(f"training questions {len(train)}, test {len(test)}, seen in training {seen}, "
          f"repeats {repeats}")
    bad = []
    if seen:
        bad.append(f"{seen} test questions are training questions")
    if repeats:
        bad.append(f"{repeats} test questions repeat")
    if split["train_distinct"] != len(train):
        bad.append(f"split.json train_distinct {split['train_distinct']} != {len(train)}")
    if split["test"] != len(test) or split["test_seen_in_training"] != 0:
        bad.append(f"split.json test {split['test']} / seen {split['test_seen_in_training']}")
    for b in bad:
        print("FAIL: " + b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
