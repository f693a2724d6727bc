"""Re-record the ptxas logs in this folder (see README.md).  Not run by the tests.

Usage: python record.py CU11_PTXAS CU12_PTXAS CU13_PTXAS
"""
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
PTX = HERE.parent / "ptx"
JOBS = {  # (ptx file, extra flags, tag)
    "axpy": ("axpy.ptx", [], "axpy"),
    "spill": ("pressure.ptx", ["-maxrregcount=32"], "spill32"),
    "local": ("local_array.ptx", [], "local"),
    "barrier": ("barrier.ptx", [], "barrier"),
    "two": ("two_kernels.ptx", [], "two"),
    "bad": ("bad.ptx", [], "bad"),
}
ARCHS = {"11.8": ["sm_70", "sm_80", "sm_90"],
         "12.9": ["sm_70", "sm_75", "sm_80", "sm_90", "sm_120"],
         "13": ["sm_75", "sm_80", "sm_90", "sm_120"]}


def main(cu11, cu12, cu13):
    for tag, exe in (("11.8", cu11), ("12.9", cu12), ("13", cu13)):
        ver = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
        name = "cuda" + [l for l in ver.splitlines() if "release" in l][0].split("release ")[1].split(",")[0]
        for arch in ARCHS[tag]:
            for ptx, flags, label in JOBS.values():
                if label == "bad" and arch != "sm_80":
                    continue
                cmd = [exe, f"-arch={arch}", "-v", *flags, str(PTX / ptx), "-o", "/dev/null"]
                p = subprocess.run(cmd, capture_output=True, text=True, cwd=PTX)
                log = (p.stdout + p.stderr).replace(str(PTX) + "/", "")
                (HERE / f"{name}_{arch}_{label}.log").write_text(log)
    # nvJitLink (the library's own summary lines follow ptxas's)
    from cuda.bindings import nvjitlink as nvj
    major, minor = nvj.version()
    for arch in ("sm_80", "sm_90", "sm_120"):
        for ptx, flags, label in JOBS.values():
            if label == "bad":
                continue
            data = (PTX / ptx).read_bytes()
            args = [f"-arch={arch}", "-verbose"] + [f.replace("-maxrregcount", "-maxrregcount") for f in flags]
            h = nvj.create(len(args), args)
            nvj.add_data(h, nvj.InputType.PTX, data, len(data), ptx)
            nvj.complete(h)
            n = nvj.get_info_log_size(h)
            buf = bytearray(n)
            nvj.get_info_log(h, buf)
            nvj.destroy(h)
            (HERE / f"nvjitlink{major}.{minor}_{arch}_{label}.log").write_text(
                buf.decode().replace("\x00", ""))


if __name__ == "__main__":
    main(*sys.argv[1:4])
