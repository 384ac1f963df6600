"""A seccomp filter that refuses a few system calls (EPERM) and lets every other one run: the
sandbox's worker refuses the kernel keyring with it (``sandbox_worker``), a submission's session
program starts and sockets (``serve``). Filters stack on a process and pass to what it forks and
execs; none is ever removed.

Only the standard library, no ``from __future__``: ``sandbox.py`` runs the worker as ``python -c``
with this file's source before its own.
"""

# seccomp_data's fields and the classic-BPF opcodes and returns the program uses
_LD_ARCH, _LD_NR = (0x20, 0, 0, 4), (0x20, 0, 0, 0)      # BPF_LD|BPF_W|BPF_ABS at offsets 4, 0
_JEQ, _AND, _RET = 0x15, 0x54, 0x06
_ALLOW, _DENY = 0x7FFF0000, 0x00050000 | 1                # SECCOMP_RET_ALLOW, RET_ERRNO | EPERM
_X32_BIT_OFF = 0xBFFFFFFF                                 # x32 numbers as x86_64's


def _matches(calls):
    """The instructions that pick out the calls `calls` names (audit arch -> syscall numbers),
    ending in an allow for every other arch or call, and the indices of the number tests, whose
    jump on a match the caller points at what follows."""
    prog, tests = [list(_LD_ARCH)], []
    for arch, nrs in calls.items():
        block = [list(_LD_NR), [_AND, 0, 0, _X32_BIT_OFF]]
        for nr in nrs:
            tests.append(len(prog) + 1 + len(block))          # its index once the block is in
            block.append([_JEQ, 0, 0, nr])
        block.append([_RET, 0, 0, _ALLOW])
        prog += [[_JEQ, 0, len(block), arch]] + block         # another arch: past this block
    prog.append([_RET, 0, 0, _ALLOW])
    return prog, tests


def program(calls):
    """The filter's instructions, [code, jt, jf, k] each: `calls` maps an audit arch
    (seccomp_data.arch) to the syscall numbers refused there; any other arch or call runs."""
    prog, tests = _matches(calls)
    for i in tests:
        prog[i][1] = len(prog) - i - 1                        # a refused call: to the deny
    prog.append([_RET, 0, 0, _DENY])
    return prog


def argument_program(calls, signo):
    """The filter's instructions for calls whose first argument is a signal and whose second
    points to its new action (sigaction, rt_sigaction, i386's signal): `calls` maps an audit arch
    to those calls' numbers, refused where the signal is `signo` and the new action is given
    (not NULL; for ``signal``, not SIG_DFL). Only the first argument's low word is compared, as
    the kernel reads an int there; the pointer in full."""
    prog, tests = _matches(calls)
    check = len(prog)
    prog += [[0x20, 0, 0, 16],                 # args[0], low word: the signal
             [_JEQ, 0, 4, signo],              # another signal: allow
             [0x20, 0, 0, 24],                 # args[1], low word: the new action
             [_JEQ, 0, 3, 0],                  # not NULL: deny
             [0x20, 0, 0, 28],                 # args[1], high word
             [_JEQ, 0, 1, 0],                  # NULL: allow; else deny
             [_RET, 0, 0, _ALLOW],
             [_RET, 0, 0, _DENY]]
    for i in tests:
        prog[i][1] = check - i - 1
    return prog


def install(prog):
    """Install `prog` on this process, no-new-privs set first. Raises OSError where the kernel
    refuses it."""
    import ctypes
    import os
    libc = ctypes.CDLL(None, use_errno=True)

    class Ins(ctypes.Structure):
        _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte),
                    ("k", ctypes.c_uint32)]

    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Ins))]
    arr = (Ins * len(prog))(*[Ins(*i) for i in prog])
    fprog = Prog(len(prog), ctypes.cast(arr, ctypes.POINTER(Ins)))
    libc.prctl(38, 1, 0, 0, 0)                                # PR_SET_NO_NEW_PRIVS
    if libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:     # PR_SET_SECCOMP, MODE_FILTER
        e = ctypes.get_errno()
        raise OSError(e, "seccomp filter: %s" % os.strerror(e))
