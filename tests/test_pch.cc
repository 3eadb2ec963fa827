// minijax tests: the owner of the test binaries' precompiled header (tests/CMakeLists.txt).
// Owns nothing else: an empty program, built once so that every folder's binary reuses its header.
int main() { return 0; }
