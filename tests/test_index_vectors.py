"""`ragfunnel index --vectors`: which dense views a Friends build embeds, and what it keeps of an existing index."""

from __future__ import annotations

import pytest

from ragfunnel.collections import dense_views as _dense_views
from ragfunnel.errors import ConfigError
from ragfunnel.store import StoreSettings

OLD = StoreSettings(dense_views=["scene", "w3s1", "utt"], derived_views={})  # an index built before issue 35


def test_without_the_option_a_default_build_keeps_the_views_of_the_index_it_replaces():
    assert _dense_views(None, StoreSettings(), None) == StoreSettings()
    kept = _dense_views(None, StoreSettings(), OLD)
    assert (kept.dense_views, kept.derived_views) == (OLD.dense_views, OLD.derived_views)
    # views set in the config file are not overridden by the old index's
    configured = StoreSettings(dense_views=["utt"])
    assert _dense_views(None, configured, OLD) == configured


def test_the_option_names_the_views_and_derives_them_as_the_settings_say():
    chosen = _dense_views("scene,w3s1,unit", StoreSettings(), OLD)
    assert chosen.dense_views == ["scene", "w3s1", "utt"]
    assert chosen.derived_views == StoreSettings(dense_views=["w3s1", "utt"]).derived_views  # the default's rule
    derived = StoreSettings(derived_views={"w3s1": "utt"})  # a config that derives windows from utterances
    assert _dense_views("scene,w3s1,utt", derived, OLD).derived_views == {"w3s1": "utt"}
    assert _dense_views("scene", derived, None).derived_views == {}  # no utterance vectors: nothing to derive from
    default = _dense_views("default", StoreSettings(), OLD)
    assert (default.dense_views, default.derived_views) == (StoreSettings().dense_views, StoreSettings().derived_views)


def test_an_unknown_view_is_a_one_line_error():
    with pytest.raises(ConfigError, match="unknown chunk view 'wx'"):
        _dense_views("w3s1,wx", StoreSettings(), None)
