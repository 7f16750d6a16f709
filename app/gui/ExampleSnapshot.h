#pragma once
// Where the bundled example snapshot (resources/example.pickle) is: installed beside the program
// (../share/memlens), in the install prefix, or in the source tree this program was built from.
#include <QString>

namespace memlens::gui {

// An existing file, or an empty string if none of the places has it.
QString findExampleSnapshot();

} // namespace memlens::gui
