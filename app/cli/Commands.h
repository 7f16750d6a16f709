#pragma once
// The memlens-cli commands. Each prints to stdout and returns the exit status; errors in the
// input throw model::ParseError, mistakes in the call throw UsageError.
#include <string>
#include <vector>

namespace memlens::cli {

int statsCommand(const std::vector<std::string>& args);
int timelineCommand(const std::vector<std::string>& args);
int stateCommand(const std::vector<std::string>& args);
int sliceCommand(const std::vector<std::string>& args);
// CaptureCommands.cpp
int recordCommand(const std::vector<std::string>& args);   // returns the job's exit status
int attachCommand(const std::vector<std::string>& args);   // 0 once detached or the job ended; 1: cannot attach
int sessionCommand(const std::vector<std::string>& args);
int exportCommand(const std::vector<std::string>& args);
// GraphsCommand.cpp
int graphsCommand(const std::vector<std::string>& args);
// SimulatorCommands.cpp
int replayCommand(const std::vector<std::string>& args);
int whatifCommand(const std::vector<std::string>& args);
// DoctorCommands.cpp
int checkCommand(const std::vector<std::string>& args);  // 3: a finding at or above --fail-on
int diffCommand(const std::vector<std::string>& args);

} // namespace memlens::cli
