"""Data and reference values for tests/modules/metrics_torchmetrics_test.cpp.

Writes <out>/data.txt (the rows metrics_probe validates) and
<out>/reference.txt ("name value" lines) computed by torchmetrics on the
whole data at once, in float64. Usage: metrics_reference.py OUT SEED N
"""
import sys
from pathlib import Path

import torch
import torchmetrics
from torchmetrics import classification as C
from torchmetrics import regression as R
from torchmetrics import aggregation as A
from torchmetrics.segmentation import DiceScore

EXPECTED_TORCHMETRICS = "1.9.0"
CLASSES = 5
LABELS = 4


def main():
    out, seed, n = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    if torchmetrics.__version__ != EXPECTED_TORCHMETRICS:
        sys.exit(f"expected torchmetrics {EXPECTED_TORCHMETRICS}, found {torchmetrics.__version__}")
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(n, CLASSES, generator=g, dtype=torch.float64)
    scores[:, CLASSES - 1] -= 1.5  # the last class: predicted rarely, never a target
    target = torch.randint(0, CLASSES - 1, (n,), generator=g)
    target[torch.rand(n, generator=g) < 0.1] = -1  # ignore_index
    bscore = torch.round(torch.rand(n, generator=g, dtype=torch.float64) * 20) / 20  # ties
    btarget = (torch.rand(n, generator=g, dtype=torch.float64) < bscore).long()
    btarget[torch.rand(n, generator=g) < 0.05] = -1
    reg_target = torch.randn(n, generator=g, dtype=torch.float64)
    reg_pred = 0.8 * reg_target + 0.5 * torch.randn(n, generator=g, dtype=torch.float64)
    # Multilabel: logits (label 0 always outside [0, 1], so every batch of
    # every rank is read as logits, as the whole data is), 0/1 targets
    # correlated with them, the last label never positive, some ignored.
    ml_logits = torch.randn(n, LABELS, generator=g, dtype=torch.float64) * 2
    ml_logits[:, 0] = torch.sign(ml_logits[:, 0]) * (1 + ml_logits[:, 0].abs())
    ml_logits = torch.round(ml_logits * 2) / 2  # ties for the curves
    ml_target = (torch.rand(n, LABELS, generator=g, dtype=torch.float64) < ml_logits.sigmoid()).long()
    ml_target[:, LABELS - 1] = 0
    ml_target[torch.rand(n, LABELS, generator=g) < 0.05] = -1

    # Class probabilities rounded to 0.1 (ties within every class), the
    # never-targeted last class included.
    probs = torch.round(scores.softmax(1) * 10) / 10

    rows = torch.cat([scores, target[:, None].double(), bscore[:, None], btarget[:, None].double(),
                      reg_pred[:, None], reg_target[:, None], ml_logits, ml_target.double(), probs], 1)
    with open(out / "data.txt", "w") as f:
        f.write(f"{rows.shape[0]} {rows.shape[1]}\n")
        for row in rows.tolist():
            f.write(" ".join(repr(v) for v in row) + "\n")

    def mc(cls, average, **kw):
        return cls(num_classes=CLASSES, average=average, ignore_index=-1, **kw)(scores, target)

    def f64(metric):  # float64 states where torchmetrics keeps floats (its default is float32)
        return metric.set_dtype(torch.float64)

    labels = scores.argmax(1)
    t0 = target.clamp_min(0)
    b0 = btarget.clamp_min(0)
    ref = {
        "acc_micro": mc(C.MulticlassAccuracy, "micro"),
        "acc_macro": mc(C.MulticlassAccuracy, "macro"),
        "acc_top2_micro": mc(C.MulticlassAccuracy, "micro", top_k=2),
        "acc_top2_macro": mc(C.MulticlassAccuracy, "macro", top_k=2),
        "precision_macro": mc(C.MulticlassPrecision, "macro"),
        "precision_micro": mc(C.MulticlassPrecision, "micro"),
        "recall_macro": mc(C.MulticlassRecall, "macro"),
        "f1_macro": mc(C.MulticlassF1Score, "macro"),
        "f1_micro": mc(C.MulticlassF1Score, "micro"),
        "fbeta05_macro": mc(C.MulticlassFBetaScore, "macro", beta=0.5),
        "jaccard_macro": mc(C.MulticlassJaccardIndex, "macro"),
        "jaccard_micro": mc(C.MulticlassJaccardIndex, "micro"),
        "dice_macro": DiceScore(num_classes=CLASSES, average="macro", input_format="index",
                                aggregation_level="global")(labels.view(1, -1), t0.view(1, -1)),
        "dice_micro": DiceScore(num_classes=CLASSES, average="micro", input_format="index",
                                aggregation_level="global")(labels.view(1, -1), t0.view(1, -1)),
        "jaccard_ignore0_macro": C.MulticlassJaccardIndex(num_classes=CLASSES, ignore_index=0)(scores, t0),
        "binary_jaccard": C.BinaryJaccardIndex()(bscore, b0),
        "binary_f1": C.BinaryF1Score()(bscore, b0),
        "binary_accuracy": C.BinaryAccuracy()(bscore, b0),
        "auroc": C.BinaryAUROC(ignore_index=-1)(bscore, btarget),
        "mc_auroc_macro": C.MulticlassAUROC(num_classes=CLASSES, average="macro", ignore_index=-1)(probs, target),
        "mc_auroc_weighted": C.MulticlassAUROC(num_classes=CLASSES, average="weighted", ignore_index=-1)(probs, target),
        "mc_ap_macro": C.MulticlassAveragePrecision(num_classes=CLASSES, average="macro", ignore_index=-1)(probs, target),
        "mc_ap_weighted": C.MulticlassAveragePrecision(num_classes=CLASSES, average="weighted",
                                                       ignore_index=-1)(probs, target),
        "mc_auroc_logits_macro": C.MulticlassAUROC(num_classes=CLASSES, average="macro", ignore_index=-1)(scores, target),
        "mc_ap_logits_weighted": C.MulticlassAveragePrecision(num_classes=CLASSES, average="weighted",
                                                              ignore_index=-1)(scores, target),
        "acc_weighted": mc(C.MulticlassAccuracy, "weighted"),
        "precision_weighted": mc(C.MulticlassPrecision, "weighted"),
        "recall_weighted": mc(C.MulticlassRecall, "weighted"),
        "f1_weighted": mc(C.MulticlassF1Score, "weighted"),
        "fbeta05_weighted": mc(C.MulticlassFBetaScore, "weighted", beta=0.5),
        "jaccard_weighted": mc(C.MulticlassJaccardIndex, "weighted"),
        "dice_weighted": DiceScore(num_classes=CLASSES, average="weighted", input_format="index",
                                   aggregation_level="global")(labels.view(1, -1), t0.view(1, -1)),
        "average_precision": C.BinaryAveragePrecision(ignore_index=-1)(bscore, btarget),
        "mse": f64(R.MeanSquaredError())(reg_pred, reg_target),
        "mae": f64(R.MeanAbsoluteError())(reg_pred, reg_target),
        "r2": f64(R.R2Score())(reg_pred, reg_target),
        "pearson": f64(R.PearsonCorrCoef())(reg_pred, reg_target),
        "mean": f64(A.MeanMetric())(reg_target, bscore),
        "max": f64(A.MaxMetric())(reg_pred),
        "min": f64(A.MinMetric())(reg_pred),
        "n": f64(A.SumMetric())(torch.ones(n, dtype=torch.float64)),
    }
    ml_labels = (ml_logits.sigmoid() > 0.5).long()
    ml_t0 = ml_target.clamp_min(0)

    def ml(cls, average, **kw):
        return cls(num_labels=LABELS, average=average, ignore_index=-1, **kw)(ml_logits, ml_target)

    ref.update({
        "ml_acc_micro": ml(C.MultilabelAccuracy, "micro"),
        "ml_acc_macro": ml(C.MultilabelAccuracy, "macro"),
        "ml_precision_micro": ml(C.MultilabelPrecision, "micro"),
        "ml_precision_macro": ml(C.MultilabelPrecision, "macro"),
        "ml_recall_micro": ml(C.MultilabelRecall, "micro"),
        "ml_recall_macro": ml(C.MultilabelRecall, "macro"),
        "ml_f1_micro": ml(C.MultilabelF1Score, "micro"),
        "ml_f1_macro": ml(C.MultilabelF1Score, "macro"),
        "ml_f1_t03_macro": ml(C.MultilabelF1Score, "macro", threshold=0.3),
        "ml_fbeta2_macro": ml(C.MultilabelFBetaScore, "macro", beta=2.0),
        "ml_acc_weighted": ml(C.MultilabelAccuracy, "weighted"),
        "ml_precision_weighted": ml(C.MultilabelPrecision, "weighted"),
        "ml_recall_weighted": ml(C.MultilabelRecall, "weighted"),
        "ml_f1_weighted": ml(C.MultilabelF1Score, "weighted"),
        "ml_jaccard_macro": ml(C.MultilabelJaccardIndex, "macro"),
        "ml_jaccard_micro": ml(C.MultilabelJaccardIndex, "micro"),
        "ml_jaccard_weighted": ml(C.MultilabelJaccardIndex, "weighted"),
        # One-hot masks [1, L, N]: every sample a position of one image.
        **{f"ml_dice_{average}": DiceScore(num_classes=LABELS, average=average, input_format="one-hot",
                                           aggregation_level="global")(ml_labels.T[None], ml_t0.T[None])
           for average in ("macro", "micro", "weighted")},
        **{f"ml_auroc_{average}": ml(C.MultilabelAUROC, average) for average in ("macro", "micro", "weighted")},
        **{f"ml_ap_{average}": ml(C.MultilabelAveragePrecision, average) for average in ("macro", "micro", "weighted")},
        # Calibration: ties on the bin edges (bscore is a multiple of 0.05,
        # 0.2 = 3/15 an edge), ignored targets, logits softmaxed per batch.
        "calibration_binary": C.BinaryCalibrationError(n_bins=15, norm="l1", ignore_index=-1)(bscore, btarget),
        "calibration_binary_max": C.BinaryCalibrationError(n_bins=15, norm="max", ignore_index=-1)(bscore, btarget),
        "calibration_multiclass": C.MulticlassCalibrationError(num_classes=CLASSES, n_bins=15, norm="l1",
                                                               ignore_index=-1)(scores, target),
        "calibration_multiclass_l2": C.MulticlassCalibrationError(num_classes=CLASSES, n_bins=10, norm="l2",
                                                                  ignore_index=-1)(scores, target),
    })
    per_class = {
        "mc_auroc_none": C.MulticlassAUROC(num_classes=CLASSES, average="none", ignore_index=-1)(probs, target),
        "mc_ap_none": C.MulticlassAveragePrecision(num_classes=CLASSES, average="none", ignore_index=-1)(probs, target),
        "ml_auroc_none": ml(C.MultilabelAUROC, "none"),
        "ml_ap_none": ml(C.MultilabelAveragePrecision, "none"),
    }
    for name, values in per_class.items():
        for k, value in enumerate(values):
            ref[f"{name}_{k}"] = value
    mlcm = C.MultilabelConfusionMatrix(num_labels=LABELS, ignore_index=-1)(ml_logits, ml_target)
    for label in range(LABELS):
        for i in range(2):
            for j in range(2):
                ref[f"cm_ml_{label}_{i}_{j}"] = mlcm[label, i, j]
    cm = C.MulticlassConfusionMatrix(num_classes=CLASSES, ignore_index=-1)(scores, target)
    for i in range(CLASSES):
        for j in range(CLASSES):
            ref[f"cm_{i}_{j}"] = cm[i, j]
    with open(out / "reference.txt", "w") as f:
        for name, value in ref.items():
            f.write(f"{name} {float(value)!r}\n")


if __name__ == "__main__":
    main()
