"""The rest of the covered layer menu (GAT, PNA, GENConv, the san_graph head) exported: TorchScript and ONNX files
equal the model in eval mode to 1e-5 on two batch shapes (the checks of tests/export/parity.py)."""
import pytest

from tests.export.cases import MENU_CASES
from tests.export.parity import assert_onnx_parity, assert_torchscript_parity, build_case


@pytest.fixture(scope="module", params=sorted(MENU_CASES))
def exported_case(request, tmp_path_factory):
    return build_case(request.param, tmp_path_factory.mktemp(request.param))


def test_the_exported_module_and_its_torchscript_file_equal_the_model(exported_case):
    assert_torchscript_parity(exported_case)


def test_the_onnx_file_equals_the_model_on_two_batch_shapes(exported_case, tmp_path):
    assert_onnx_parity(exported_case, tmp_path)
