import csv

from clipeval.jsonl import write_json
from clipeval.summary import summarize


def metrics(r1, extra=None):
    t2i = {"R@1": r1, "R@5": 50.0, "R@10": 60.0, **(extra or {})}
    i2t = {"R@1": 20.0, "R@5": 40.0, "R@10": 70.0}
    return {"t2i": t2i, "i2t": i2t, "rsum": r1 + 240.0, "mean_recall": (r1 + 240.0) / 6,
            "counts": {"images": 1000, "texts": 5000}}


def test_rows_in_given_order_with_every_metric(tmp_path):
    write_json(tmp_path / "b.json", metrics(12.3456))
    write_json(tmp_path / "a.json", metrics(30.0, {"R@50": 99.0}))
    summarize([("m2", "flickr", tmp_path / "b.json"), ("m1", "coco", tmp_path / "a.json")],
              tmp_path / "summary.csv", tmp_path / "summary.md")
    rows = list(csv.DictReader(open(tmp_path / "summary.csv")))
    assert [(r["model"], r["dataset"]) for r in rows] == [("m2", "flickr"), ("m1", "coco")]
    assert list(rows[0]) == ["model", "dataset", "task", "t2i_R@1", "t2i_R@5", "t2i_R@10", "i2t_R@1", "i2t_R@5",
                             "i2t_R@10", "rsum", "mean_recall", "top1", "top5", "mean_per_class_recall",
                             "images", "texts", "classes", "t2i_R@50"]
    assert rows[0]["t2i_R@1"] == "12.3456" and rows[0]["t2i_R@50"] == "" and rows[1]["t2i_R@50"] == "99.0"
    markdown = (tmp_path / "summary.md").read_text().splitlines()
    assert markdown[0].startswith("| model | dataset | task | t2i_R@1 |")
    assert markdown[2].startswith("| m2 | flickr | retrieval | 12.35 | 50.00 |")


def test_classification_rows_share_the_table(tmp_path):
    write_json(tmp_path / "r.json", metrics(30.0))
    write_json(tmp_path / "c.json", {"task": "classification", "top1": 61.5, "top5": None, "mean_per_class_recall": 60.25,
                                     "counts": {"images": 600, "classes": 4, "classes_with_images": 4}})
    summarize([("m", "retrieval-set", tmp_path / "r.json"), ("m", "classes-set", tmp_path / "c.json")],
              tmp_path / "summary.csv", tmp_path / "summary.md")
    rows = list(csv.DictReader(open(tmp_path / "summary.csv")))
    assert (rows[1]["task"], rows[1]["top1"], rows[1]["top5"], rows[1]["classes"], rows[1]["t2i_R@1"]) == (
        "classification", "61.5", "", "4", "")
    assert rows[0]["top1"] == "" and rows[0]["texts"] == "5000"
    table = (tmp_path / "summary.md").read_text().splitlines()
    assert "| m | classes-set | classification |  |  |  |  |  |  |  |  | 61.50 | n/a | 60.25 | 600 |  | 4 |" == table[3]
