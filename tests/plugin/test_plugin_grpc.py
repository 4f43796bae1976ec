"""The GUI path: cuvis-ai-core's own gRPC service, driven by a real gRPC client.

Users who do not write Python train through the cuvis-ai GUI, which talks to cuvis-ai-core's
gRPC service.  Here that service runs in this process, bound to 127.0.0.1 on a free port, and
a client makes the GUI's calls: a session, our plugin manifest from ``dvc-cuvis plugins-dir``
(and one for the test's node), the pipeline with ``data_module: dvc_npz_multi``, a trainrun
config, then ``Train``.  The service builds each run's environment with its composer (``uv``,
the network); that one step is stood in for by :func:`_composed_env`, through the hook
cuvis-ai-core provides (``orchestrator_bridge.set_composer``).  Everything else is the real
service, its child runtime process included.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import venv
from collections.abc import Iterator, Mapping
from concurrent import futures
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("pytorch_lightning")
grpc = pytest.importorskip("grpc")
pytest.importorskip("grpc_health")

from tests.helpers.plugin_project import (  # noqa: E402
    PIPELINE,
    REPO,
    build_project,
    mat,
    swap_frame,
    tamper_pin,
)

NODES_PLUGIN = {  # the test's statistical node, as a plugin the pipeline names
    "name": "dvc_cuvis_test_nodes",
    "path": str(REPO),
    "capabilities": [{"class_name": "tests.helpers.nodes.ChannelMeanScore", "kind": "node"}],
}


def _composed_env(root: Path) -> Any:
    """Stands in for cuvis-ai-core's composer (``uv`` and the network): an environment with
    each local plugin's source on its path, over the packages installed here."""
    site = next(p for p in sys.path if p.endswith("site-packages") and "/.venv/" in p)

    def compose(plugins: Mapping[str, Any], **_: Any) -> Path:
        env = root / "env" / "runtime"
        if not env.exists():
            venv.EnvBuilder(symlinks=True, with_pip=False).create(env)
            lines = sorted({str(Path(m.path).resolve()) for m in plugins.values()
                            if getattr(m, "path", None)})
            pth = next(env.glob("lib/python*/site-packages")) / "_composed.pth"
            pth.write_text("".join(f"{line}\n" for line in lines)
                           + f"import site; site.addsitedir({site!r})\n")
        return env

    return compose


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example, materialized, with its cuvis-ai data group and trainrun."""
    return build_project(tmp_path_factory.mktemp("project"))


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Any]:
    """cuvis-ai-core's gRPC service on 127.0.0.1 (a free port), and a client stub for it."""
    from cuvis_ai_core.grpc import cuvis_ai_pb2_grpc, orchestrator_bridge
    from cuvis_ai_core.grpc.service import CuvisAIService

    orchestrator_bridge.set_composer(_composed_env(tmp_path))
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    servicer = CuvisAIService()
    cuvis_ai_pb2_grpc.add_CuvisAIServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield cuvis_ai_pb2_grpc.CuvisAIServiceStub(channel)
    finally:
        channel.close()
        for sid in list(servicer.session_manager.list_sessions()):
            servicer.session_manager.close_session(sid)  # stops its child runtime
        server.stop(grace=None).wait()
        orchestrator_bridge.reset_composer()


def _gui_session(stub: Any, root: Path) -> str:
    """What the GUI does before ``Train``: session, plugins, pipeline, trainrun config."""
    import yaml
    from cuvis_ai_core.grpc.v1 import cuvis_ai_pb2
    from cuvis_ai_schemas.plugin import load_plugin_manifest

    from dvc_cuvis.plugin.manifest import PLUGINS_DIR

    sid = stub.CreateSession(cuvis_ai_pb2.CreateSessionRequest()).session_id
    ours = load_plugin_manifest(PLUGINS_DIR / "dvc_cuvis.yaml")  # path made absolute
    for manifest in (ours.model_dump(mode="json"), NODES_PLUGIN):
        reply = stub.LoadPlugin(cuvis_ai_pb2.LoadPluginRequest(
            session_id=sid, manifest=cuvis_ai_pb2.PluginManifest(
                config_bytes=json.dumps(manifest).encode())))
        assert reply.registered_plugin == manifest["name"], reply.error
    pipeline = {**yaml.safe_load(PIPELINE), "plugins": ["dvc_cuvis_test_nodes"]}
    stub.LoadPipeline(cuvis_ai_pb2.LoadPipelineRequest(
        session_id=sid, data_module="dvc_npz_multi",
        pipeline=cuvis_ai_pb2.PipelineConfig(config_bytes=json.dumps(pipeline).encode())))
    trainrun = {"name": "gui_run", "output_dir": str(root / "out"), "data": {
        "data_module": "dvc_npz_multi", "batch_size": 2,
        "splits": {"splits_path": str(mat(root) / "splits.json")},
        "params": {"universe_csv": str(mat(root) / "universe.csv")}}}
    stub.SetTrainRunConfig(cuvis_ai_pb2.SetTrainRunConfigRequest(
        session_id=sid, config=cuvis_ai_pb2.TrainRunConfig(
            config_bytes=json.dumps(trainrun).encode())))
    return sid


def _train(stub: Any, sid: str) -> list[Any]:
    from cuvis_ai_core.grpc.v1 import cuvis_ai_pb2

    return list(stub.Train(cuvis_ai_pb2.TrainRequest(
        session_id=sid, trainer_type=cuvis_ai_pb2.TRAINER_TYPE_STATISTICAL)))


_PATHS = re.compile(r"(?<![\w./-])((?:\.{1,2}/|[\w.-]+/)[\w./-]*)")


@pytest.mark.slow  # one child runtime process (torch + Lightning imports)
@pytest.mark.child_process
def test_gui_trains_clean_and_gets_our_message_on_drift(project: Path,
                                                         tmp_path: Path, service: Any) -> None:
    root = tmp_path / "p"
    shutil.copytree(project, root)
    sid = _gui_session(service, root)
    from cuvis_ai_core.grpc.v1 import cuvis_ai_pb2

    done = _train(service, sid)
    assert done[-1].status == cuvis_ai_pb2.TRAIN_STATUS_COMPLETE, done[-1]
    for tamper in (tamper_pin, swap_frame):
        tamper(root)
        with pytest.raises(grpc.RpcError) as err:
            _train(service, sid)
        code, msg = err.value.code(), err.value.details()
        assert code == grpc.StatusCode.INVALID_ARGUMENT, (tamper.__name__, code, msg)
        assert msg.startswith("dvc_npz_multi: refusing to train: "), msg
        assert "Traceback" not in msg and "fix: " in msg
        assert str(mat(root).resolve() / "splits.json") in msg
        # every path a GUI user reads is absolute, or relative to a folder the message names:
        # the server's working folder is not theirs
        named = re.findall(r"relative to (/\S+), the folder of universe.csv", msg)
        for path in _PATHS.findall(msg):
            assert path.startswith("/") or (named and (Path(named[0]) / path).is_file()), (
                tamper.__name__, path, msg)
        assert named == ([] if tamper is tamper_pin else [mat(root).resolve().as_posix()])
        shutil.copytree(project / "example", root / "example", dirs_exist_ok=True)
    assert _train(service, sid)[-1].status == cuvis_ai_pb2.TRAIN_STATUS_COMPLETE
