// The router's answers to its clients as a Beast body: the JSON text, then the binary parts of the
// model answers it passes on (the binary data extension), written from the answers they came in
// without being joined into one string.
#pragma once

#include <boost/optional.hpp>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "asio.h"

namespace pipescale::router {

struct SplicedBody {
  struct value_type {
    // A part of one of `held`: `size` bytes from `offset`.
    struct Part {
      size_t held = 0;
      size_t offset = 0;
      size_t size = 0;
    };
    std::string text;               // written first: the JSON, or the whole body
    std::vector<std::string> held;  // model answers whose binary parts follow it
    std::vector<Part> parts;        // in the order they are written
  };

  static std::uint64_t size(const value_type& body) {
    std::uint64_t bytes = body.text.size();
    for (const value_type::Part& p : body.parts) bytes += p.size;
    return bytes;
  }

  // Beast's BodyWriter: every piece in one buffer sequence, handed over once.
  class writer {
   public:
    using const_buffers_type = std::vector<asio::const_buffer>;

    template <bool isRequest, class Fields>
    writer(const http::header<isRequest, Fields>& /*header*/, const value_type& body)
        : body_(body) {}
    void init(beast::error_code& ec) { ec = {}; }
    boost::optional<std::pair<const_buffers_type, bool>> get(beast::error_code& ec) {
      ec = {};
      if (done_) return boost::none;
      done_ = true;
      const_buffers_type buffers;
      buffers.reserve(1 + body_.parts.size());
      buffers.emplace_back(body_.text.data(), body_.text.size());
      for (const value_type::Part& p : body_.parts) {
        buffers.emplace_back(body_.held[p.held].data() + p.offset, p.size);
      }
      return std::make_pair(std::move(buffers), false);
    }

   private:
    const value_type& body_;
    bool done_ = false;
  };
};

// What the router answers a client.
using ClientResponse = http::response<SplicedBody>;

}  // namespace pipescale::router
