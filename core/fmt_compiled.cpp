// fmt's compiled half, built once for the library. The torch wheel ships
// fmt's headers without its library; used header-only, every translation
// unit that formats compiled vformat and the float writers again (a third of
// a small main()'s code, ~10 s of its compile). Without FMT_HEADER_ONLY,
// FMT_FUNC is empty and format-inl.h's functions get their one definition
// here; the templates the headers only declare are instantiated below.
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
template auto locale_ref::get<std::locale>() const -> std::locale;

namespace detail {
template auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;
template auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template auto thousands_sep_impl(locale_ref) -> thousands_sep_result<wchar_t>;
template auto decimal_point_impl(locale_ref) -> char;
template auto decimal_point_impl(locale_ref) -> wchar_t;
}  // namespace detail
FMT_END_NAMESPACE
