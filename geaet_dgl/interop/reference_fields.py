"""The reference's configuration values mapped to our fields: its dataset, network, positional encodings, head
and training read through a :class:`~.reference_keys.KeyReader` into a :class:`~geaet_dgl.config.ModelConfig`
and a :class:`~geaet_dgl.config.TrainConfig`.

A value we cannot reproduce is a one-line :class:`~geaet_dgl.config.ConfigError` naming the key and what is
supported (:meth:`~.reference_keys.KeyReader.require`). :mod:`.reference_yaml` calls :func:`read_dataset`,
:func:`read_model`, :func:`read_laplacian_norm` and :func:`read_train`.
"""
from __future__ import annotations

import re
from typing import Optional, Tuple

from ..config.model import GEANetConfig, GraphormerConfig, ModelConfig, SignNetConfig
from ..config.train import TrainConfig
from ..data import schema as _schema
from ..errors import ConfigError
from .reference_keys import (DATASETS, NO_EDGE_ATTR, OGB_ATOM_VOCAB, OGB_BOND_VOCAB, PE_NAMES, KeyReader,
                             ReferenceDataset)

_LOCAL = {"CustomGatedGCN": "gatedgcn", "GCN": "gcn", "GIN": "gin", "GINE": "gine", "GAT": "gat", "PNA": "pna",
          "GENConv": "genconv", "None": "none"}
_GLOBAL = {"Transformer": "transformer", "BiasedTransformer": "biased_transformer", "Performer": "performer",
           "None": "none"}
_EXTERNAL = {"GEANet": True, "None": False}
_HEADS = {"default": "graph", "graph": "graph", "mlp_graph": "mlp_graph", "san_graph": "san_graph",
          "inductive_node": "node", "node": "node", "inductive_edge": "link", "ogb_code_graph": "sequence"}
_POOLING = {"mean": "mean", "add": "sum", "max": "max", "graph_token": "first"}
_METRICS = {"accuracy": "accuracy", "accuracy-SBM": "balanced_accuracy", "mae": "mae", "ap": "average_precision",
            "f1": "f1_macro", "auc": "roc_auc", "mrr": "mrr"}
_MINIMISED = ("mae",)


def read_dataset(get: KeyReader) -> ReferenceDataset:
    key = (get("dataset.format"), get("dataset.name"))
    if key not in DATASETS:
        known = ", ".join(f"{f}/{n}" for f, n in DATASETS)
        raise ConfigError(f"{get.where}: dataset.format/name={key[0]}/{key[1]} is not a dataset --config "
                          f"supports; supported: {known}")
    dataset = DATASETS[key]
    get.require("dataset.task", (dataset.task,), f"GraphGPS marks {dataset.name}")
    if get("dataset.task_type") != dataset.task_type:
        raise get.fail("dataset.task_type", f"does not match {dataset.name} (it is {dataset.task_type!r})")
    get.require("dataset.split_mode", ("standard",), "the datasets' own splits:")
    splits = _schema.schema_of(dataset.name).num_splits
    index = get("dataset.split_index")
    if not isinstance(index, int) or not 0 <= index < splits:
        raise get.fail("dataset.split_index", f"must be 0 .. {splits - 1}: {dataset.name} has "
                                              f"{splits} public split{'s' if splits > 1 else ''}")
    get.require("run_multiple_splits", ([],))
    get.require("dataset.transform", ("none",))
    get.require("dataset.remove_feature", (False,))
    get.require("dataset.to_undirected", (False,))
    get.require("dataset.infer_link_label", ("None",))
    if dataset.name in ("voc", "coco"):
        get.require("dataset.slic_compactness", (30,), "the LRGB files geaet-dgl reads are built with")
    else:
        get.used.add("dataset.slic_compactness")
    get.require("train.sampler", ("full_batch",))
    get.require("val.sampler", ("full_batch",))
    return dataset


def _pe(get: KeyReader) -> Tuple[str, str, bool]:
    """(base node encoder name, our pe, GraphormerBias on) from ``dataset.node_encoder_name`` and the
    ``posenc_*`` switches."""
    if not get("dataset.node_encoder"):  # no encoder: graphgym's GNNPreMP (layers_pre_mp) reads the raw features
        get.used.update({"dataset.node_encoder_name", "dataset.node_encoder_bn"})
        for name in ("posenc_EquivStableLapPE", "posenc_LapPE", "posenc_RWSE", "posenc_SignNet", "posenc_HKdiagSE",
                     "posenc_ElstaticSE", "posenc_GraphormerBias"):
            if get(f"{name}.enable"):
                raise get.fail(f"{name}.enable", "needs dataset.node_encoder: True (the PE is a node encoder)")
        if get("gnn.layers_pre_mp") != 1:
            raise get.fail("gnn.layers_pre_mp", "must be 1 without a node encoder (GraphGPS needs the features "
                                                "mapped to gt.dim_hidden; geaet-dgl builds one pre-MP layer)")
        return "PreMP", "none", False
    get.require("dataset.node_encoder_bn", (False,))
    parts = str(get("dataset.node_encoder_name")).split("+")
    graphormer = "GraphormerBias" in parts
    named = [p for p in parts if p in PE_NAMES]
    bases = [p for p in parts if p not in PE_NAMES and p != "GraphormerBias"]
    # GraphGPS concatenates up to three encoders in the file's order: <Base>, then each PE's channels
    two = len(named) == 2 and named[0] in ("LapPE", "SignNet") and named[1] == "RWSE" and not graphormer
    if (len(named) > 1 and not two) or len(bases) > 1 or parts.count("GraphormerBias") > 1 or \
            (graphormer and parts.index("GraphormerBias") != len(bases)) or \
            (named and parts.index(named[0]) < len(bases)):
        raise get.fail("dataset.node_encoder_name", f"is not supported; use <Base>, <Base>+<PE>, <PE>, "
                                                    f"<Base>+LapPE+RWSE, <Base>+SignNet+RWSE or "
                                                    f"<Base>+GraphormerBias[+<PE>], a PE of {', '.join(PE_NAMES)}")
    for name in ("posenc_EquivStableLapPE", "posenc_LapPE", "posenc_RWSE", "posenc_SignNet", "posenc_HKdiagSE",
                 "posenc_ElstaticSE", "posenc_GraphormerBias"):
        wanted = name in {f"posenc_{n}" for n in named} or (graphormer and name == "posenc_GraphormerBias")
        if bool(get(f"{name}.enable")) != wanted:
            raise get.fail(f"{name}.enable", f"disagrees with dataset.node_encoder_name="
                                             f"{get('dataset.node_encoder_name')!r} (set it to {wanted})")
    pe = "+".join(PE_NAMES[n] for n in named) if named else "none"
    return (bases[0] if bases else "LinearNode"), pe, graphormer


def read_laplacian_norm(get: KeyReader, model: ModelConfig) -> Optional[str]:
    """The Laplacian the data must be decomposed with: the reference reads ``posenc_LapPE.eigen.laplacian_norm``
    for LapPE *and* EquivStableLapPE."""
    if model.pe not in ("eslappe", "lappe", "signnet"):
        return None
    key = "posenc_SignNet.eigen.laplacian_norm" if model.pe == "signnet" else "posenc_LapPE.eigen.laplacian_norm"
    norm = str(get(key)).lower()
    if norm not in ("sym", "none"):
        raise get.fail(key, "is not supported; use sym or none")
    return norm


def read_model(get: KeyReader, dataset: ReferenceDataset) -> ModelConfig:
    gps = get.require("model.type", ("GEAET", "GPSModel"), "--config reads GEAET and GraphGPS configurations:") \
        == "GPSModel"
    config = ModelConfig()  # fields the network does not read keep these defaults
    config.node_in_feats, config.edge_in_feats, config.out_feats = (dataset.node_in_feats, dataset.edge_in_feats,
                                                                    dataset.out_feats)
    base, pe, graphormer = _pe(get)
    config.pe, _, second = pe.partition("+")
    if base not in dataset.node_encoders and base != "PreMP":
        raise get.fail("dataset.node_encoder_name", f"does not fit {dataset.name}; use "
                                                    f"{' or '.join(dataset.node_encoders)} (with a PE)")
    if base == "Atom":
        config.node_encoder, config.node_vocab_sizes = "embedding", list(OGB_ATOM_VOCAB)
    elif base == "TypeDictNode":
        config.node_encoder, config.node_vocab_sizes = "typedict", [get("dataset.node_encoder_num_types")]
    elif base == "PPANode":  # one learned vector for every node (ogbg-ppa's nodes carry no features)
        config.node_encoder = "constant"
    elif base == "PreMP":  # graphgym's GNNPreMP: Linear without bias -> BatchNorm -> activation
        if not get("gnn.batchnorm") or get("gnn.act") != "relu" or get("gnn.dropout"):
            raise get.fail("gnn.batchnorm", "geaet-dgl builds the pre-MP layer with BatchNorm, ReLU and no dropout "
                                            "(gnn.batchnorm: True, gnn.act: relu, gnn.dropout: 0.0)")
        if not get("gnn.l2norm"):
            raise get.fail("gnn.l2norm", "geaet-dgl's pre-MP layer scales each node's features to unit L2 norm, as "
                                         "graphgym's default gnn.l2norm: True does; set it to True")
        config.node_encoder = "premp"
    elif base == "ASTNode":  # type, attribute, depth (capped at 20) embeddings, summed
        config.node_encoder, config.node_vocab_sizes = "embedding", list(_schema.CODE2_NODE_VOCAB)
    edge = get("dataset.edge_encoder_name")
    if not get("dataset.edge_encoder"):  # graphgym builds no edge encoder: GCN and friends read no edges
        config.edge_encoder = "none"
        get.used.update({"dataset.edge_encoder_bn"})
    else:
        get.require("dataset.edge_encoder_bn", (False,))
        if edge not in dataset.edge_encoders:
            raise get.fail("dataset.edge_encoder_name", f"does not fit {dataset.name}; use "
                                                        f"{' or '.join(dataset.edge_encoders)}")
        if edge == "DummyEdge":
            config.edge_encoder = "constant"
        elif edge == "Bond":
            config.edge_encoder, config.edge_vocab_sizes = "embedding", list(OGB_BOND_VOCAB)
        elif edge == "TypeDictEdge":
            config.edge_encoder, config.edge_vocab_sizes = "typedict", [get("dataset.edge_encoder_num_types")]
        elif edge == "ASTEdge":  # AST or next-token edge, direction
            config.edge_encoder, config.edge_vocab_sizes = "embedding", list(_schema.CODE2_EDGE_VOCAB)
    _pe_settings(get, config)
    if second:  # <Base>+LapPE+RWSE: the kernel encoding's settings go to model.se_*
        kernel = ModelConfig(pe=second)
        _pe_settings(get, kernel)
        config.se, config.se_k, config.se_dim = second, kernel.pe_k, kernel.pe_dim
        config.se_raw_norm, config.se_model = kernel.pe_raw_norm, kernel.pe_model
        config.se_layers = kernel.pe_layers if kernel.pe_model == "mlp" else 1

    layer_type = str(get("gt.layer_type")).split("+")
    shape, parts = ("LOCAL+GLOBAL", 2) if gps else ("LOCAL+GLOBAL+EXTERNAL", 3)
    if len(layer_type) != parts or layer_type[0] not in _LOCAL or layer_type[1] not in _GLOBAL \
            or (not gps and layer_type[2] not in _EXTERNAL):
        raise get.fail("gt.layer_type", f"is not supported; use {shape} with LOCAL one of {', '.join(_LOCAL)}; "
                                        f"GLOBAL one of {', '.join(_GLOBAL)}"
                                        + ("" if gps else "; EXTERNAL GEANet or None"))
    config.mpnn, config.attention = _LOCAL[layer_type[0]], _GLOBAL[layer_type[1]]
    config.external = False if gps else _EXTERNAL[layer_type[2]]
    _graphormer(get, config, dataset, graphormer)
    config.performer_pad_keys = config.attention == "performer"  # the reference pads graphs to a dense batch
    config.hidden_dim, config.num_layers, config.num_heads = get("gt.dim_hidden"), get("gt.layers"), get("gt.n_heads")
    if get("gnn.dim_inner") != config.hidden_dim:
        raise get.fail("gnn.dim_inner", f"must equal gt.dim_hidden={config.hidden_dim} (the reference refuses "
                                        "anything else)")
    get.require("gnn.layers_pre_mp", (1,) if config.node_encoder == "premp" else (0,))
    if gps:  # GraphGPS's GPSLayer: one gt.dropout after every branch and in the FFN (and inside GatedGCN)
        dropout = float(get("gt.dropout"))
        config.local_dropout = config.global_dropout = config.ffn_dropout = dropout
        config.attn_dropout = float(get("gt.attn_dropout"))
    else:
        for ours, theirs in (("local_dropout", "local_dropout"), ("global_dropout", "global_dropout"),
                             ("external_dropout", "external_dropout"), ("ffn_dropout", "ffn_dropout"),
                             ("attn_dropout", "attn_dropout")):
            setattr(config, ours, float(get(f"gt.{theirs}")))
        config.use_ffn, config.local_out_act = bool(get("gt.use_ffn")), bool(get("gt.local_out_act"))
    norms = (bool(get("gt.batch_norm")), bool(get("gt.layer_norm")))
    if norms == (True, True) or (norms == (False, False) and not gps):
        raise get.fail("gt.batch_norm", f"with gt.layer_norm={norms[1]} is not supported; set exactly one of "
                                        "gt.batch_norm and gt.layer_norm to True"
                                        + ("" if gps else " (GEAET's layer normalises every branch)"))
    config.norm = "batch" if norms[0] else "layer" if norms[1] else "none"  # GPSLayer: neither is no norm
    config.activation = get.require("gnn.act", ("relu", "gelu"))
    _head(get, config)
    if gps:
        return config
    heads, unit_size = get("GEANet.n_heads"), get("GEANet.unit_size")
    if isinstance(heads, int) and isinstance(unit_size, int) and heads * unit_size == config.hidden_dim:
        unit_size = None  # what our configuration derives from the width, as the presets leave it
    config.geanet = GEANetConfig(num_heads=heads, unit_size=unit_size,
                                 edge_unit=bool(get("GEANet.edge_unit")),
                                 shared_unit=bool(get("GEANet.shared_unit")), scope="batch")
    if config.external and config.geanet.shared_unit and not config.geanet.edge_unit:
        raise get.fail("GEANet.shared_unit", "without GEANet.edge_unit fails in the reference (it builds share_U "
                                             "only with the edge unit); set GEANet.edge_unit: True")
    return config


def _graphormer(get: KeyReader, config: ModelConfig, dataset: ReferenceDataset, enabled: bool) -> None:
    """Graphormer's encodings (``...+GraphormerBias`` in ``dataset.node_encoder_name``)."""
    if not enabled:
        if config.attention == "biased_transformer":
            raise get.fail("gt.layer_type", "reads Graphormer's attention bias; add +GraphormerBias to "
                                            "dataset.node_encoder_name and set posenc_GraphormerBias.enable: True")
        return
    degrees_only = bool(get("posenc_GraphormerBias.node_degrees_only"))
    get.require("posenc_GraphormerBias.dim_pe", (0,), "GraphormerBias adds no PE channels:")
    graph_token = bool(get("graphormer.use_graph_token"))
    sizes = {}
    for key in ("num_spatial_types", "num_in_degrees", "num_out_degrees"):
        value = get(f"posenc_GraphormerBias.{key}")
        if key == "num_spatial_types" and degrees_only:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise get.fail(f"posenc_GraphormerBias.{key}", "must be a positive integer (the reference needs it)")
        sizes[key] = value
    if not degrees_only:
        if config.attention != "biased_transformer":
            get.used.update({"graphormer.num_heads"})  # the bias is computed and never read
        elif get("graphormer.num_heads") != config.num_heads:
            raise get.fail("graphormer.num_heads", f"must equal gt.n_heads={config.num_heads} (the bias has one "
                                                   "row per attention head)")
        if dataset.name not in NO_EDGE_ATTR + ("zinc",):
            raise get.fail("posenc_GraphormerBias.node_degrees_only", f"on {dataset.name} also encodes the edge "
                                                                      "features along shortest paths, which the "
                                                                      "reference reads as one integer type per "
                                                                      "edge (ZINC's) and fails on these; set it "
                                                                      "to True")
        if dataset.name == "zinc":  # its bond types, encoded along the shortest paths
            sizes["num_edge_types"] = get("dataset.edge_encoder_num_types")
            if not isinstance(sizes["num_edge_types"], int) or sizes["num_edge_types"] < 1:
                raise get.fail("dataset.edge_encoder_num_types", "must be a positive integer (the reference's "
                                                                 "path encoding embeds ZINC's bond types)")
    config.graphormer = GraphormerConfig(enable=True, degrees_only=degrees_only,
                                         spatial_types=sizes.get("num_spatial_types", 20),
                                         num_in_degrees=sizes["num_in_degrees"],
                                         num_out_degrees=sizes["num_out_degrees"],
                                         num_edge_types=sizes.get("num_edge_types", 0),
                                         input_dropout=float(get("graphormer.input_dropout")),
                                         graph_token=graph_token)
    if graph_token and config.pe != "none":
        raise get.fail("graphormer.use_graph_token", "with a PE after GraphormerBias fails in the reference (the "
                                                     "token adds a row per graph the PE does not have); set it "
                                                     "to False or drop the PE")



def _pe_settings(get: KeyReader, config: ModelConfig) -> None:
    if config.pe == "eslappe":
        config.pe_k = config.pe_dim = get("posenc_EquivStableLapPE.eigen.max_freqs")
        get.require("posenc_EquivStableLapPE.eigen.eigvec_norm", ("L2",))
        get.require("posenc_EquivStableLapPE.raw_norm_type", ("none",))
    elif config.pe == "lappe":
        get.require("posenc_LapPE.model", ("DeepSet",))
        get.require("posenc_LapPE.eigen.eigvec_norm", ("L2",))
        get.require("posenc_LapPE.raw_norm_type", ("none",))
        get.require("posenc_LapPE.post_layers", (0,))
        config.pe_k, config.pe_dim = get("posenc_LapPE.eigen.max_freqs"), get("posenc_LapPE.dim_pe")
        config.pe_layers = get("posenc_LapPE.layers")
    elif config.pe == "signnet":
        model = str(get("posenc_SignNet.model"))
        if model not in ("DeepSet", "MLP"):
            raise get.fail("posenc_SignNet.model", "is not supported; use DeepSet or MLP")
        get.require("posenc_SignNet.eigen.eigvec_norm", ("L2",))
        config.pe_k, config.pe_dim = get("posenc_SignNet.eigen.max_freqs"), get("posenc_SignNet.dim_pe")
        config.signnet = SignNetConfig(model=model.lower(), phi_layers=max(2, get("posenc_SignNet.layers")),
                                       phi_hidden_dim=get("posenc_SignNet.phi_hidden_dim"),
                                       phi_out_dim=get("posenc_SignNet.phi_out_dim"),
                                       rho_layers=get("posenc_SignNet.post_layers"))
        if config.signnet.rho_layers < 1:
            raise get.fail("posenc_SignNet.post_layers", "must be >= 1 (the reference refuses 0: rho needs a layer)")
        get.used.update({"posenc_SignNet.raw_norm_type", "posenc_SignNet.n_heads"})  # SignNet reads neither
    elif config.pe in ("rwse", "hkdiagse", "elstaticse"):
        name = {"rwse": "posenc_RWSE", "hkdiagse": "posenc_HKdiagSE", "elstaticse": "posenc_ElstaticSE"}[config.pe]
        model = str(get(f"{name}.model")).lower()
        if model not in ("linear", "mlp"):
            raise get.fail(f"{name}.model", "is not supported; use Linear or mlp")
        config.pe_model, config.pe_dim = model, get(f"{name}.dim_pe")
        config.pe_k = _kernel_times(get, name, start=None if config.pe == "elstaticse" else 1)
        if config.pe == "elstaticse" and config.pe_k != 10:
            raise get.fail(f"{name}.kernel.times_func", "must give 10 times: the reference's ElstaticSE encoder "
                                                        "reads its 10 statistics through len(kernel.times)")
        raw = str(get(f"{name}.raw_norm_type")).lower()
        if raw not in ("none", "batchnorm"):
            raise get.fail(f"{name}.raw_norm_type", "is not supported; use none or BatchNorm")
        config.pe_raw_norm = raw == "batchnorm"
        if model == "mlp":
            config.pe_layers = get(f"{name}.layers")
        get.used.update({f"{name}.layers", f"{name}.n_heads", f"{name}.post_layers"})  # read by other models only


def _kernel_times(get: KeyReader, name: str, start: Optional[int] = 1) -> int:
    """Number of kernel times of ``name``: ``kernel.times`` or ``kernel.times_func``; they must be
    ``start, start + 1, ...`` (RWSE and HKdiagSE: steps/times 1..K); ``start=None``: only counted (ElstaticSE)."""
    times = list(get(f"{name}.kernel.times") or [])
    func = str(get(f"{name}.kernel.times_func") or "")
    if not times:
        match = re.fullmatch(r"\s*range\(\s*(?:(-?\d+)\s*,\s*)?(-?\d+)\s*\)\s*", func)
        if match is None:
            raise get.fail(f"{name}.kernel.times_func", f"is not supported; use range({start or 1},K+{start or 1})")
        times = list(range(int(match.group(1) or 0), int(match.group(2))))
    if start is None and times:
        return len(times)
    if not times or times != list(range(start, start + len(times))):
        raise get.fail(f"{name}.kernel.times", f"is not supported; geaet-dgl uses times {start}..K "
                                               f"(times_func: range({start},K+{start}))")
    return len(times)


def _head(get: KeyReader, config: ModelConfig) -> None:
    head = get("gnn.head")
    if head not in _HEADS:
        raise get.fail("gnn.head", f"is not supported; use one of {', '.join(_HEADS)}")
    config.head = _HEADS[head]
    # graphgym's assert_cfg raises layers_post_mp to at least 1
    config.head_layers = max(1, int(get("gnn.layers_post_mp")))
    if config.head == "sequence":
        if config.head_layers != 1:
            raise get.fail("gnn.layers_post_mp", "must be 1: GraphGPS's ogb_code_graph head has one linear map "
                                                 "per position")
        config.seq_len = int(_schema.CODE2_SEQ_LEN)
    if config.head == "san_graph":  # GraphGPS builds it with its default L=2, whatever layers_post_mp says
        config.head_layers = 3
        get.used.add("gnn.layers_post_mp")
    if config.head in ("graph", "mlp_graph", "san_graph", "sequence"):
        pooling = get("model.graph_pooling")
        if pooling not in _POOLING:
            raise get.fail("model.graph_pooling", f"is not supported; use one of {', '.join(_POOLING)}")
        config.pooling = _POOLING[pooling]
    if config.head == "mlp_graph":  # GraphGPS's mlp_graph head is the only one that reads gnn.dropout
        config.head_dropout = float(get("gnn.dropout"))
    else:
        get.used.add("gnn.dropout")


def read_train(get: KeyReader, dataset: ReferenceDataset) -> TrainConfig:
    train = TrainConfig()
    modes = ("custom", "inference-only") if get("pretrained.dir") else ("custom",)
    get.require("train.mode", modes, "the reference's custom training loop (or, with pretrained.dir, "
                                     "inference-only):")
    eval_period = get("train.eval_period")
    if not isinstance(eval_period, int) or isinstance(eval_period, bool) or eval_period < 1:
        raise get.fail("train.eval_period", "must be a positive integer")
    inference = get("train.mode") == "inference-only"  # nothing is optimised: the optimiser is not read
    optimizer = get.require("optim.optimizer", ("adamW", "adam"))  # graphgym's adam: torch's Adam, coupled L2
    train.optimizer = "adam" if optimizer == "adam" else "adamw"
    scheduler = get.require("optim.scheduler", ("cosine_with_warmup", "linear_with_warmup")
                            + (("cos",) if inference else ()))
    train.schedule = "cosine" if scheduler == "cosine_with_warmup" else "linear"
    accumulate = get("optim.batch_accumulation")
    if not isinstance(accumulate, int) or isinstance(accumulate, bool) or accumulate < 1:
        raise get.fail("optim.batch_accumulation", "must be a positive integer")
    train.accumulate = accumulate
    get.require("model.size_average", ("mean",))
    get.require("model.thresh", (0.5,))
    get.require("model.edge_decoding", ("dot",))
    train.batch_size, train.seed = get("train.batch_size"), get("seed")
    train.lr, train.weight_decay = float(get("optim.base_lr")), float(get("optim.weight_decay"))
    train.epochs, train.warmup_epochs = get("optim.max_epoch"), get("optim.num_warmup_epochs")
    train.eval_every = eval_period
    train.clip_grad_norm = float(get("optim.clip_grad_norm_value")) if get("optim.clip_grad_norm") else None
    if not get("optim.clip_grad_norm"):
        get.used.add("optim.clip_grad_norm_value")
    loss = get("model.loss_fun")
    if loss == "cross_entropy":
        loss = {"classification_multilabel": "bce", "subtoken_prediction": "subtoken_cross_entropy"}.get(
            dataset.task_type, "cross_entropy")
        if _schema.schema_of(dataset.name).task == "link":  # GraphGPS's inductive_edge: scored pairs
            loss = "link_cross_entropy"
    elif loss not in ("weighted_cross_entropy", "l1"):
        raise get.fail("model.loss_fun", "is not supported; use cross_entropy, weighted_cross_entropy or l1")
    train.loss = loss
    metric = get("metric_best")
    if metric not in _METRICS:
        raise get.fail("metric_best", f"is not supported (auto picks the epoch by validation loss); use one of "
                                      f"{', '.join(_METRICS)}")
    train.metric = _METRICS[metric]
    if dataset.name == "ogbg-code2" and metric == "f1":  # OGB's F1 of the predicted subtokens
        train.metric = "f1_subtoken"
    direction = "argmin" if train.metric in _MINIMISED else "argmax"
    if get("metric_agg") != direction:
        raise get.fail("metric_agg", f"does not fit metric_best={metric!r}; use {direction}")
    return train
