module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x8xf32>, %arg1: tensor<8x16xf32>, %arg2: tensor<16xf32>, %arg3: tensor<16x4xf32>, %arg4: tensor<4xf32>) -> (tensor<4x4xf32> {jax.result_info = "result[0]"}, tensor<4x16xf32> {jax.result_info = "result[1]"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %1 = stablehlo.broadcast_in_dim %arg2, dims = [1] : (tensor<16xf32>) -> tensor<1x16xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0, 1] : (tensor<1x16xf32>) -> tensor<4x16xf32>
    %3 = stablehlo.add %0, %2 : tensor<4x16xf32>
    %cst = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x16xf32>
    %5 = stablehlo.multiply %4, %3 : tensor<4x16xf32>
    %cst_0 = stablehlo.constant dense<1.41421354> : tensor<f32>
    %6 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<4x16xf32>
    %7 = stablehlo.divide %3, %6 : tensor<4x16xf32>
    %8 = chlo.erf %7 : tensor<4x16xf32> -> tensor<4x16xf32>
    %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %9 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<4x16xf32>
    %10 = stablehlo.add %9, %8 : tensor<4x16xf32>
    %11 = stablehlo.multiply %5, %10 : tensor<4x16xf32>
    %12 = stablehlo.dot_general %11, %arg3, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x16xf32>, tensor<16x4xf32>) -> tensor<4x4xf32>
    %13 = stablehlo.broadcast_in_dim %arg4, dims = [1] : (tensor<4xf32>) -> tensor<1x4xf32>
    %14 = stablehlo.broadcast_in_dim %13, dims = [0, 1] : (tensor<1x4xf32>) -> tensor<4x4xf32>
    %15 = stablehlo.add %12, %14 : tensor<4x4xf32>
    %cst_2 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %16 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<4x16xf32>
    %17 = stablehlo.multiply %16, %3 : tensor<4x16xf32>
    %18 = stablehlo.negate %3 : tensor<4x16xf32>
    %cst_3 = stablehlo.constant dense<0.707106769> : tensor<f32>
    %19 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<4x16xf32>
    %20 = stablehlo.multiply %18, %19 : tensor<4x16xf32>
    %21 = chlo.erfc %20 : tensor<4x16xf32> -> tensor<4x16xf32>
    %22 = stablehlo.multiply %17, %21 : tensor<4x16xf32>
    return %15, %22 : tensor<4x4xf32>, tensor<4x16xf32>
  }
}
