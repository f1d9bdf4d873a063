module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x8xbf16>, %arg1: tensor<8x6xbf16>, %arg2: tensor<6xbf16>) -> (tensor<4x6xbf16> {jax.result_info = "result[0]"}, tensor<6xf32> {jax.result_info = "result[1]"}, tensor<4x6xf32> {jax.result_info = "result[2]"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x8xbf16>, tensor<8x6xbf16>) -> tensor<4x6xbf16>
    %1 = stablehlo.broadcast_in_dim %arg2, dims = [1] : (tensor<6xbf16>) -> tensor<1x6xbf16>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0, 1] : (tensor<1x6xbf16>) -> tensor<4x6xbf16>
    %3 = stablehlo.add %0, %2 : tensor<4x6xbf16>
    %4 = call @relu(%3) : (tensor<4x6xbf16>) -> tensor<4x6xbf16>
    %5 = stablehlo.convert %4 : (tensor<4x6xbf16>) -> tensor<4x6xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %6 = stablehlo.reduce(%5 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<4x6xf32>, tensor<f32>) -> tensor<6xf32>
    %cst_0 = stablehlo.constant dense<2.000000e+00> : tensor<bf16>
    %7 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<bf16>) -> tensor<4x6xbf16>
    %8 = stablehlo.multiply %4, %7 : tensor<4x6xbf16>
    %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<bf16>
    %9 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<bf16>) -> tensor<4x6xbf16>
    %10 = stablehlo.subtract %8, %9 : tensor<4x6xbf16>
    %11 = stablehlo.convert %10 : (tensor<4x6xbf16>) -> tensor<4x6xf32>
    return %4, %6, %11 : tensor<4x6xbf16>, tensor<6xf32>, tensor<4x6xf32>
  }
  func.func private @relu(%arg0: tensor<4x6xbf16>) -> tensor<4x6xbf16> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<bf16>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<bf16>) -> tensor<4x6xbf16>
    %1 = stablehlo.maximum %arg0, %0 : tensor<4x6xbf16>
    return %1 : tensor<4x6xbf16>
  }
}
