// std::__throw_bad_array_new_length: what gcc 11+'s allocator calls on an oversized array
// (GLIBCXX_3.4.29); RHEL 8's libstdc++ (gcc 8) ends at GLIBCXX_3.4.25. Defined here, the
// module binds it to this copy (-Bsymbolic) and needs no newer libstdc++ than the system's.
#include <new>

namespace std {
void __throw_bad_array_new_length() { throw bad_array_new_length(); }
}  // namespace std
