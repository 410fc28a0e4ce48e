// GET /csp/pixel?r=255&g=0&b=0: a binary body -- a 1x1 BMP of the colour asked for, built per request.
#include <csp/csp.hpp>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <string>

static std::uint8_t channel(const csp::request& request, const char* name) {
    auto value = request.query_arg(name);
    if (!value) return 0;
    int n = std::atoi(std::string(*value).c_str());
    return static_cast<std::uint8_t>(n < 0 ? 0 : n > 255 ? 255 : n);
}

static int pixel(const csp::request& request, csp::reply& reply) {
    // BITMAPFILEHEADER (14) + BITMAPINFOHEADER (40) + one 24-bit pixel padded to 4 bytes = 58 bytes.
    std::array<std::uint8_t, 58> bmp{'B', 'M', 58, 0, 0, 0, 0, 0, 0, 0, 54, 0, 0, 0,
                                     40, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 24, 0};
    bmp[34] = 4;  // image size
    bmp[54] = channel(request, "b");
    bmp[55] = channel(request, "g");
    bmp[56] = channel(request, "r");
    reply.content_type("image/bmp");
    reply.append(std::string_view(reinterpret_cast<const char*>(bmp.data()), bmp.size()));
    return 200;
}

CSP_CPP_HANDLER(pixel)
