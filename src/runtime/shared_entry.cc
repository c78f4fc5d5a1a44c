// libweft.so is the engine archive linked whole; this file only gives the target a source.
namespace weft::internal {
extern const int kSharedLibraryMarker = 1;
}  // namespace weft::internal
