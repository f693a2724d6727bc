"""ptxforge.ptx.demangle: Itanium C++ names as c++filt prints them, and never an exception.

Names come from CUDA C++ compiled with NVRTC (``tests/data/cu/names.cu``: templates, namespaces,
an operator, a lambda, a ``__shared__`` array in a template) and from a table of constructs
NVRTC does not put in a PTX file.  Where binutils' ``c++filt`` is installed every name is also
compared with it.
"""

from __future__ import annotations

import doctest
import functools
import importlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ptxforge.ptx.demangle import demangle, demangle_function
from ptxforge.ptx.parse import parse

from corpus_util import compile_cu

CU = Path(__file__).parents[1] / "data" / "cu" / "names.cu"


@functools.lru_cache(maxsize=None)
def names_ptx() -> str:
    return compile_cu(CU.read_text(), "names", "sm_80", True)


def mangled_in(ptx: str) -> set:
    """Every mangled name of a PTX text: symbols, and .loc function names (.debug_str)."""
    found = {n for n in re.findall(r"\b_Z[\w$]+", ptx) if not re.search(r"_param_\d+$", n)}
    for k in parse(ptx).kernels:
        for inst in k.instructions:
            for frame in (inst.loc.chain() if inst.loc else ()):
                if frame.function:
                    found.add(frame.function)
    return found


NVRTC_NAMES = {
    "_Z9dot_blockILi128EEvPKfS1_Pfi":
        "void dot_block<128>(float const*, float const*, float*, int)",
    "_ZZ9dot_blockILi128EEvPKfS1_PfiE4smem":
        "dot_block<128>(float const*, float const*, float*, int)::smem",
    "_Z2tkIdLb1EEvPT_yN3geo3BoxIS0_Li4EEE":
        "void tk<double, true>(double*, unsigned long long, geo::Box<double, 4>)",
    "_Z2tkIfLb0EEvPT_yN3geo3BoxIS0_Li4EEE":
        "void tk<float, false>(float*, unsigned long long, geo::Box<float, 4>)",
    "_Z2vkPN3geo4Vec3ERKS0_PFviE4halfcxt":
        "vk(geo::Vec3*, geo::Vec3 const&, void (*)(int), half, char, long long, unsigned short)",
    "_Z3litILj4ELln7ELc97EEvPi": "void lit<4u, -7l, (char)97>(int*)",
    "_ZN3geoplERKNS_4Vec3ES2_": "geo::operator+(geo::Vec3 const&, geo::Vec3 const&)",
    "_ZNK3geo3BoxIdLi4EE3sumEv": "geo::Box<double, 4>::sum() const",
    "_ZZ2vkPN3geo4Vec3ERKS0_PFviE4halfcxtENKUliE_clEi":
        "vk(geo::Vec3*, geo::Vec3 const&, void (*)(int), half, char, long long, unsigned short)"
        "::{lambda(int)#1}::operator()(int) const",
}


def test_names_nvrtc_writes():
    found = mangled_in(names_ptx())
    assert set(NVRTC_NAMES) <= found, sorted(set(NVRTC_NAMES) - found)
    for name, expected in NVRTC_NAMES.items():
        assert demangle(name) == expected
    (hidden,) = [n for n in found if "hidden" in n]  # NVRTC adds a per-file prefix
    assert demangle(hidden).endswith("::geo::(anonymous namespace)::hidden(int)")
    assert all(demangle(n) != n for n in found), "every name NVRTC wrote is understood"


TABLE = {
    # the audit's examples
    "_Z2sciii": "sc(int, int, int)",
    "_Z5weno5PKdllib": "weno5(double const*, long, long, int, bool)",
    # templates: T_ parameters, packs, literals of every integer flavour, nested templates
    "_Z3maxIfET_S0_S0_": "float max<float>(float, float)",
    "_ZN1AIiE1BIfE1fIcEEvT_": "void A<int>::B<float>::f<char>(char)",
    "_ZN1A1fIiEEvT_": "void A::f<int>(int)",
    "_Z1fIJifEEvDpT_": "void f<int, float>(int, float)",
    "_ZN5Outer5InnerIfE4callIJidEEEvDpOT_":
        "void Outer::Inner<float>::call<int, double>(int&&, double&&)",
    "_Z1fIiJEEvv": "void f<int>()",
    "_Z1fILb0EEvv": "void f<false>()",
    "_Z1fILin5EEvv": "void f<-5>()",
    "_Z1fILm5EEvv": "void f<5ul>()",
    "_Z1fILx5EEvv": "void f<5ll>()",
    "_Z1fILy5EEvv": "void f<5ull>()",
    "_Z1fILs5EEvv": "void f<(short)5>()",
    "_Z1fILh5EEvv": "void f<(unsigned char)5>()",
    "_Z1fIL2E11EEvv": "void f<(E1)1>()",
    "_Z1fILf3f800000EEvv": "void f<(float)[3f800000]>()",
    "_Z1fIN1A1BEEvv": "void f<A::B>()",
    "_Z1fIPFviEEvT_": "void f<void (*)(int)>(void (*)(int))",
    # declarators: pointers, references, cv, arrays, functions, members, vectors
    "_Z1fPKPKc": "f(char const* const*)",
    "_Z1fPVKi": "f(int const volatile*)",
    "_Z1fPrKi": "f(int const restrict*)",
    "_Z1fOi": "f(int&&)",
    "_Z1fRA4_i": "f(int (&) [4])",
    "_Z1fRKA4_i": "f(int const (&) [4])",
    "_Z1fPA4_Kf": "f(float const (*) [4])",
    "_Z1fA2_A3_i": "f(int [2][3])",
    "_Z1fPA_i": "f(int (*) [])",
    "_Z1fPFPFivEvE": "f(int (*(*)())())",
    "_Z1fPFvRiE": "f(void (*)(int&))",
    "_Z1fM3FooFviE": "f(void (Foo::*)(int))",
    "_Z1fM3FooKFviE": "f(void (Foo::*)(int) const)",
    "_Z1fM3Fooi": "f(int Foo::*)",
    "_Z1fPDv4_f": "f(float __vector(4)*)",
    "_Z1fiz": "f(int, ...)",
    "_Z1fDn": "f(decltype(nullptr))",
    "_Z1fDh": "f(half)",
    "_Z1fDF16_": "f(_Float16)",
    "_Z1fn": "f(__int128)",
    "_Z1fDi": "f(char32_t)",
    # std abbreviations and substitutions of them
    "_Z1fSt6vectorIiSaIiEE": "f(std::vector<int, std::allocator<int> >)",
    "_ZNKSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE5c_strEv":
        "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >"
        "::c_str() const",
    "_Z1fRSs": "f(std::basic_string<char, std::char_traits<char>, std::allocator<char> >&)",
    "_ZSt4swapIiEvRT_S1_": "void std::swap<int>(int&, int&)",
    "_ZNSaIiEC1Ev": "std::allocator<int>::allocator()",
    # constructors, destructors, operators, qualifiers of member functions
    "_ZN3FooC1Ev": "Foo::Foo()",
    "_ZN3FooC2ERKS_": "Foo::Foo(Foo const&)",
    "_ZN3FooD2Ev": "Foo::~Foo()",
    "_ZN3FoocviEv": "Foo::operator int()",
    "_ZN1SaSERKS_": "S::operator=(S const&)",
    "_ZN1SixEi": "S::operator[](int)",
    "_ZN1SclEv": "S::operator()()",
    "_ZNK1SntEv": "S::operator!() const",
    "_ZN1SltIiEEbT_": "bool S::operator< <int>(int)",
    "_ZN1SnwEm": "S::operator new(unsigned long)",
    "_ZdlPv": "operator delete(void*)",
    "_ZNR1S1fEv": "S::f() &",
    "_ZNO1S1fEv": "S::f() &&",
    # variables, local names, anonymous namespaces, special names, clones
    "_Z1f": "f",
    "_ZN2ns3varE": "ns::var",
    "_ZZ1fvE1x": "f()::x",
    "_ZZ1fvE1x_0": "f()::x",
    "_ZZ1fvEN1S1gEv": "f()::S::g()",
    "_ZN12_GLOBAL__N_11fEv": "(anonymous namespace)::f()",
    "_ZTV3Foo": "vtable for Foo",
    "_ZGVZ1fvE1x": "guard variable for f()::x",
    "_Z1fv.clone.1": "f() [clone .clone.1]",
    "_Z1fv.constprop.0.isra.1": "f() [clone .constprop.0] [clone .isra.1]",
    "_ZN1S1fEv.part.0": "S::f() [clone .part.0]",
}


@pytest.mark.parametrize("name", sorted(TABLE))
def test_table(name):
    assert demangle(name) == TABLE[name]


UNCHANGED = [
    "Gu", "add_kernel", "julia_foo_1234", "__nv_sinf", "_Z", "_Z1", "_Z2f", "_Zx", "",
    "_Z1fIXplLi1ELi2EEEvv",   # an expression as a template argument
    "_Z1fU8__vectorf",        # a vendor qualifier
    "_Z1fSsS_",               # S_ refers to nothing (Ss is no substitution candidate)
    "_Z1f.clone.1",           # a clone suffix on a variable
    "_Z1fIPFvEEvT_",          # a function type without parameter types
    "_Z1fFvRE",               # a ref-qualified function type outside a class
]


@pytest.mark.parametrize("name", UNCHANGED)
def test_names_it_cannot_read_come_back_unchanged(name):
    assert demangle(name) == name
    assert demangle_function(name) == name


def test_never_raises_on_truncated_or_corrupted_names():
    for name in list(TABLE) + list(NVRTC_NAMES):
        for cut in range(len(name) + 1):
            for variant in (name[:cut], name[:cut] + "E", name[:cut] + "_S9_" + name[cut:]):
                result = demangle(variant)
                assert isinstance(result, str)
                assert demangle_function(variant) is not None
    assert demangle(None) is None and demangle(42) == 42  # not text: given back as is


def test_short_form_drops_parameters_and_return_types():
    assert demangle_function("_Z9dot_blockILi128EEvPKfS1_Pfi") == "dot_block<128>"
    assert demangle_function("_Z2sciii") == "sc"
    assert demangle_function("_ZNK3geo3BoxIdLi4EE3sumEv") == "geo::Box<double, 4>::sum"
    assert demangle_function("_ZZ2vkPN3geo4Vec3ERKS0_PFviE4halfcxtENKUliE_clEi") == \
        "vk::{lambda(int)#1}::operator()"
    assert demangle_function("_ZN1S1fEv.part.0") == "S::f"
    assert demangle_function("_ZZ9dot_blockILi128EEvPKfS1_PfiE4smem") == "dot_block<128>::smem"


def test_deterministic():
    first = {n: demangle(n) for n in TABLE}
    assert {n: demangle(n) for n in reversed(list(TABLE))} == first


@pytest.mark.skipif(shutil.which("c++filt") is None, reason="binutils c++filt not installed")
def test_same_as_cxxfilt():
    names = sorted(set(TABLE) | mangled_in(names_ptx()))
    out = subprocess.run(["c++filt"], input="\n".join(names) + "\n", capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert {n: demangle(n) for n in names} == dict(zip(names, out))


def test_doctests():
    module = importlib.import_module("ptxforge.ptx.demangle")  # ptxforge.ptx.demangle is the function
    result = doctest.testmod(module)
    assert result.failed == 0 and result.attempted >= 3
