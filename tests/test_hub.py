"""Publishing without a network: what would be pushed, and the datasets builder API."""
from __future__ import annotations

import datasets
import pytest

from mmlbdata.dataset.build import build_configs
from mmlbdata.dataset.hub import push_folder


class RecordingUploader:
    def __init__(self):
        self.calls = []

    def push_config(self, dataset, repo_id, config, **kwargs):
        self.calls.append((repo_id, config, dataset.num_rows, dataset.features, kwargs))


def test_push_sends_every_config_with_its_features(tmp_path, coco_mini, tokenizer_path):
    build_configs(["vh_single_8k", "vh_multi_8k"], {"coco": coco_mini}, tmp_path, limit=2,
                  store_root=tmp_path / "store", tokenizer=tokenizer_path, progress=False)
    uploader = RecordingUploader()
    plan = push_folder(tmp_path, "org/mmlb", private=True, revision="v1", uploader=uploader)
    assert plan.configs == ["vh_multi_8k", "vh_single_8k"]
    repo, config, rows, features, kwargs = uploader.calls[1]
    assert (repo, config, rows) == ("org/mmlb", "vh_single_8k", 12)
    assert isinstance(features["images"].feature, datasets.Image)
    assert kwargs == {"private": True, "revision": "v1"}
    with pytest.raises(FileNotFoundError, match="vh_single_128k"):
        push_folder(tmp_path, "org/mmlb", configs=["vh_single_128k"], uploader=uploader)


def test_builders_work_through_the_datasets_api(tmp_path, coco_mini, tokenizer_path):
    from mmlb_builders.vh import VisualHaystack
    from mmlbdata.core.store import ImageStore
    from mmlbdata.core.tokens import TokenCounter

    builder = VisualHaystack("vh_single_8k", sources={"coco": coco_mini}, limit=1,
                             store=ImageStore(tmp_path / "store"), counter=TokenCounter(tokenizer_path),
                             cache_dir=str(tmp_path / "cache"))
    builder.download_and_prepare()
    ds = builder.as_dataset(split="test")
    assert ds.num_rows == 6 and len(ds[0]["images"]) == ds[0]["prompt"].count("<image>")
