#pragma once
// Runs a piece of Python in a running interpreter, on its main thread at a safe point with the
// GIL held (memlens-cli attach). Python 3.14 and later: sys.remote_exec, run by the target's
// own interpreter binary. 3.8 to 3.13: gdb attaches for a moment, maps a page holding the code
// and queues Py_AddPendingCall(PyRun_SimpleString, page); the code unmaps its page when it ran.
#include "memlens/capture/ProcessProbe.h"

#include <string>

namespace memlens::capture {

struct Injection {
    bool ok = false;
    std::string method;  // "sys.remote_exec" or "gdb"
    std::string error;   // one line, when !ok
    bool permission = false;  // the error is a refusal to trace
};

// code: a Python module's text, run with exec() in a namespace of its own; "__MEMLENS_PAGE__" in
// it is replaced by the address of the page to unmap (0 with sys.remote_exec). scriptDir: a
// private directory for the files the injection needs. gdb: the debugger's path.
Injection injectPython(const ProcessProbe& target, const std::string& code, const std::string& scriptDir,
                       const std::string& gdb);

// gdb on PATH ("" when absent).
std::string findGdb();

// Whether the target's interpreter takes sys.remote_exec (Python 3.14 and later); else gdb.
bool usesRemoteExec(const ProcessProbe& target);

// text as a Python string literal (a JSON string is one).
std::string pythonLiteral(const std::string& text);

} // namespace memlens::capture
