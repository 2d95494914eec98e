"""Reads a TensorBoard run folder with the tensorboard package and prints
what it found as JSON: scalars, histograms and the hparams plugin records.

    python read_tensorboard.py RUN_FOLDER
"""
import glob
import json
import os
import sys

from tensorboard import context
from tensorboard.backend.event_processing import data_provider, event_accumulator, plugin_event_multiplexer
from tensorboard.plugins import base_plugin
from tensorboard.plugins.hparams import backend_context, list_session_groups
from tensorboard.compat.proto import event_pb2
from tensorboard.compat.tensorflow_stub import errors, pywrap_tensorflow
from tensorboard.plugins.hparams import api_pb2, metadata


def strict_record_count(path):
    """Every record of one event file, CRCs checked; raises on any damage."""
    reader = pywrap_tensorflow.PyRecordReader_New(path)
    count = 0
    while True:
        try:
            reader.GetNext()
        except errors.OutOfRangeError:
            return count
        event_pb2.Event.FromString(reader.record())
        count += 1


def main(folder):
    files = sorted(glob.glob(os.path.join(folder, "events.out.tfevents.*")))
    records = {os.path.basename(f): strict_record_count(f) for f in files}
    acc = event_accumulator.EventAccumulator(
        folder, size_guidance={event_accumulator.SCALARS: 0, event_accumulator.HISTOGRAMS: 0}
    )
    acc.Reload()
    tags = acc.Tags()
    out = {"records": records, "scalars": {}, "histograms": {}, "hparams": {}}
    for tag in tags["scalars"]:
        out["scalars"][tag] = [[e.step, e.value] for e in acc.Scalars(tag)]
    for tag in tags["histograms"]:
        out["histograms"][tag] = [
            {
                "step": e.step,
                "min": e.histogram_value.min,
                "max": e.histogram_value.max,
                "num": e.histogram_value.num,
                "sum": e.histogram_value.sum,
                "bucket_limit": list(e.histogram_value.bucket_limit),
                "bucket": list(e.histogram_value.bucket),
            }
            for e in acc.Histograms(tag)
        ]
    try:
        content = acc.PluginTagToContent(metadata.PLUGIN_NAME)
    except KeyError:  # no hparams records in this run
        content = {}
    if metadata.SESSION_START_INFO_TAG in content:
        start = metadata.parse_session_start_info_plugin_data(content[metadata.SESSION_START_INFO_TAG])
        values = {}
        for name, value in start.hparams.items():
            kind = value.WhichOneof("kind")
            values[name] = {"kind": kind, "value": getattr(value, kind)}
        out["hparams"]["session_start"] = {"hparams": values, "start_time_secs": start.start_time_secs}
    if metadata.EXPERIMENT_TAG in content:
        exp = metadata.parse_experiment_plugin_data(content[metadata.EXPERIMENT_TAG])
        out["hparams"]["experiment"] = {
            "hparams": {h.name: api_pb2.DataType.Name(h.type) for h in exp.hparam_infos},
            "metrics": [m.name.tag for m in exp.metric_infos],
        }
    if metadata.SESSION_END_INFO_TAG in content:
        end = metadata.parse_session_end_info_plugin_data(content[metadata.SESSION_END_INFO_TAG])
        out["hparams"]["session_end"] = {"status": api_pb2.Status.Name(end.status), "end_time_secs": end.end_time_secs}
    out["tab"] = hparams_tab(folder)
    print(json.dumps(out))


def hparams_tab(run_folder):
    """What TensorBoard's HPARAMS tab shows for `tensorboard --logdir` on the
    parent of `run_folder`, computed by the hparams plugin's own backend (the
    code behind the tab's requests); groups: those of `run_folder` only."""
    folder = os.path.dirname(os.path.abspath(run_folder))
    run = os.path.basename(os.path.abspath(run_folder))
    multiplexer = plugin_event_multiplexer.EventMultiplexer()
    multiplexer.AddRunsFromDirectory(folder)
    multiplexer.Reload()
    provider = data_provider.MultiplexerDataProvider(multiplexer, folder)
    backend = backend_context.Context(
        base_plugin.TBContext(logdir=folder, multiplexer=multiplexer, data_provider=provider)
    )
    request_context = context.RequestContext()
    experiment = backend.experiment_from_metadata(
        request_context,
        "",
        True,
        backend.hparams_metadata(request_context, ""),
        backend.hparams_from_data_provider(request_context, "", None),
    )
    request = api_pb2.ListSessionGroupsRequest(
        start_index=0,
        slice_size=100,
        allowed_statuses=[api_pb2.Status.Value(name) for name in api_pb2.Status.keys()],
    )
    groups = list_session_groups.Handler(request_context, backend, "", request).run().session_groups
    return {
        "hparams": sorted(h.name for h in experiment.hparam_infos),
        "metrics": sorted(m.name.tag for m in experiment.metric_infos),
        "groups": [
            {
                "statuses": [api_pb2.Status.Name(s.status) for s in g.sessions],
                "metrics": {m.name.tag: m.value for m in g.metric_values},
            }
            for g in groups
            if all(s.name == run for s in g.sessions)
        ],
    }


if __name__ == "__main__":
    main(sys.argv[1])
