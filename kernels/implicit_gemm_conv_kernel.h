// The kernel of kernels/implicit_gemm_conv.cpp (see there: the original, its source and the deviations), in a
// header so that tests/test_layout_dot_ports.cpp generates code for the very kernel the suite runs.
#pragma once

#include <utility>

#include <tritium/tritium.h>

namespace tritium_ports::implicit_gemm_conv {

namespace tl = tritium::tl;
using tl::_;
using tl::None;
using tritium::DType;
using P = tl::ptr<tl::any>;

inline auto conv2d_forward_kernel = tritium::kernel(
    "conv2d_forward_kernel",
    [](P input_pointer, P weight_pointer, P output_pointer, P bias_pointer, tl::i32 in_n, tl::i32 input_height,
       tl::i32 input_width, tl::i32 out_c, tl::i32 out_height, tl::i32 out_width, tl::i32 input_n_stride,
       tl::i32 input_c_stride, tl::i32 input_height_stride, tl::i32 input_width_stride, tl::i32 weight_n_stride,
       tl::i32 weight_c_stride, tl::i32 weight_height_stride, tl::i32 weight_width_stride, tl::i32 output_n_stride,
       tl::i32 output_c_stride, tl::i32 output_height_stride, tl::i32 output_width_stride, int weight_c,
       int weight_height, int weight_width, int stride_height, int stride_width, int padding_height,
       int padding_width, int dilation_height, int dilation_width, int groups, int BLOCK_NI_HO_WO, int BLOCK_CI,
       int BLOCK_CO, int ACCUM_DTYPE_) {
      const DType ACCUM_DTYPE = static_cast<DType>(ACCUM_DTYPE_);
      auto pid_ni_ho_wo = tl::program_id(0);
      auto pid_co = tl::program_id(1);
      auto pid_group = tl::program_id(2);

      // caculate in_n out_height out_weight value in kernel
      auto ni_ho_wo_offset = pid_ni_ho_wo * BLOCK_NI_HO_WO + tl::arange(0, BLOCK_NI_HO_WO);
      auto ni_ho_offset = ni_ho_wo_offset / out_width;
      auto in_n_point_value = ni_ho_offset / out_height;
      auto output_height_point_value = ni_ho_offset % out_height;
      auto output_width_point_value = ni_ho_wo_offset % out_width;

      // Load the input and weight pointers. input and weight are of shape
      // [in_n, groups, in_c, input_height, input_width] and [groups, out_c, in_c, weight_height, weight_width]
      auto out_per_group_c = out_c / groups;
      auto output_c_offset = pid_co * BLOCK_CO + tl::arange(0, BLOCK_CO);
      input_pointer += (input_n_stride * in_n_point_value + input_c_stride * pid_group * weight_c)(_, None);
      weight_pointer += (weight_n_stride * output_c_offset + weight_n_stride * pid_group * out_per_group_c)(None, _);

      auto accum = tl::zeros({BLOCK_NI_HO_WO, BLOCK_CO}, ACCUM_DTYPE);
      const int BLOCK_CI_COUNT = (weight_c + BLOCK_CI - 1) / BLOCK_CI;
      for (auto hwc : tl::range(0, weight_height * weight_width * BLOCK_CI_COUNT)) {
        auto c = (hwc % BLOCK_CI_COUNT) * BLOCK_CI;
        auto hw = hwc / BLOCK_CI_COUNT;
        auto h = hw / weight_width;
        auto w = hw % weight_width;

        auto input_c_offset = c + tl::arange(0, BLOCK_CI);
        auto input_height_offset = h * dilation_height - padding_height + stride_height * output_height_point_value;
        auto input_width_offset = w * dilation_width - padding_width + stride_width * output_width_point_value;

        auto curr_input_pointer = input_pointer + (input_c_stride * input_c_offset)(None, _) +
                                  (input_height_stride * input_height_offset)(_, None) +
                                  (input_width_stride * input_width_offset)(_, None);
        auto curr_weight_pointer = weight_pointer + (weight_c_stride * input_c_offset)(_, None) +
                                   (weight_height_stride * h) + (weight_width_stride * w);

        auto input_mask = (in_n_point_value < in_n)(_, None) & (input_c_offset < weight_c)(None, _) &
                          (0 <= input_height_offset)(_, None) & (input_height_offset < input_height)(_, None) &
                          (0 <= input_width_offset)(_, None) & (input_width_offset < input_width)(_, None);
        auto weight_mask = (input_c_offset < weight_c)(_, None) & (output_c_offset < out_per_group_c)(None, _);

        auto input_block = tl::load(curr_input_pointer, input_mask);
        auto weight_block = tl::load(curr_weight_pointer, weight_mask);

        accum += tl::dot(input_block, weight_block, std::nullopt, std::nullopt, "ieee");  // allow_tf32=False
      }
      bias_pointer += (pid_group(None) * out_per_group_c)(None, _) + output_c_offset(None, _);
      auto mask_bias = (output_c_offset < out_per_group_c)(None, _);
      auto bias = tl::load(bias_pointer, mask_bias).to(ACCUM_DTYPE);
      accum += bias;
      output_pointer += (output_n_stride * in_n_point_value)(_, None) +
                        (output_c_stride * (pid_group * out_per_group_c + output_c_offset))(None, _) +
                        (output_height_stride * output_height_point_value)(_, None) +
                        (output_width_stride * output_width_point_value)(_, None);
      auto output_mask = (in_n_point_value < in_n)(_, None) & (output_c_offset < out_per_group_c)(None, _) &
                         (output_height_point_value < out_height)(_, None) &
                         (output_width_point_value < out_width)(_, None);

      tl::store(output_pointer, accum, output_mask);
    },
    {"input_pointer", "weight_pointer", "output_pointer", "bias_pointer", "in_n", "input_height", "input_width",
     "out_c", "out_height", "out_width", "input_n_stride", "input_c_stride", "input_height_stride",
     "input_width_stride", "weight_n_stride", "weight_c_stride", "weight_height_stride", "weight_width_stride",
     "output_n_stride", "output_c_stride", "output_height_stride", "output_width_stride", "weight_c",
     "weight_height", "weight_width", "stride_height", "stride_width", "padding_height", "padding_width",
     "dilation_height", "dilation_width", "groups", "BLOCK_NI_HO_WO", "BLOCK_CI", "BLOCK_CO", "ACCUM_DTYPE"});

}  // namespace tritium_ports::implicit_gemm_conv
