"""Fidelity: the model (`sim`) against the machine (the measurements in `results/`, read
through the `records` leaf; fidelity imports neither `kernels` nor `instruments`).

    python -m fidelity                 the headline kernels, predicted beside what they measured
    python -m fidelity --all           every committed measurement
    python -m fidelity story           the model's story with our H200's measured ladder beside it
    python -m fidelity lanes [--out D] the model's lanes under each committed Proton trace
    python -m fidelity calibrate [--tab2|--softmax|--align]   how the fitted constants were chosen
    python -m fidelity crossval [--all] each kernel family held out of the fits, then predicted
    python -m fidelity persistent [--file F|--section-order]   persistent fa3 vs plain, the model
    python -m fidelity probes          the model's numbers for the queued device probes

`compare` predicts every measured kernel at the tile it ran; `lanes` puts the model's per-warpgroup
timeline under a Proton trace; `calibrate` refits the constants the datasheets do not give;
`crossval` refits them without each kernel family and predicts it; `preset` rebuilds the `h200`
preset's measured constants from their files.
"""
