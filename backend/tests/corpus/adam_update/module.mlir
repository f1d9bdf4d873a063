module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x5xf32>, %arg1: tensor<4x5xf32>, %arg2: tensor<4x5xf32>, %arg3: tensor<4x5xf32>, %arg4: tensor<i32>) -> (tensor<4x5xf32> {jax.result_info = "result[0]"}, tensor<4x5xf32> {jax.result_info = "result[1]"}, tensor<4x5xf32> {jax.result_info = "result[2]"}, tensor<i32> {jax.result_info = "result[3]"}) {
    %cst = stablehlo.constant dense<0.899999976> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x5xf32>
    %1 = stablehlo.multiply %0, %arg2 : tensor<4x5xf32>
    %cst_0 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<4x5xf32>
    %3 = stablehlo.multiply %2, %arg1 : tensor<4x5xf32>
    %4 = stablehlo.add %1, %3 : tensor<4x5xf32>
    %cst_1 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<4x5xf32>
    %6 = stablehlo.multiply %5, %arg3 : tensor<4x5xf32>
    %cst_2 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<4x5xf32>
    %8 = stablehlo.multiply %7, %arg1 : tensor<4x5xf32>
    %9 = stablehlo.multiply %8, %arg1 : tensor<4x5xf32>
    %10 = stablehlo.add %6, %9 : tensor<4x5xf32>
    %11 = stablehlo.convert %arg4 : (tensor<i32>) -> tensor<f32>
    %cst_3 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %12 = stablehlo.power %cst_3, %11 : tensor<f32>
    %cst_4 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %13 = stablehlo.subtract %cst_4, %12 : tensor<f32>
    %14 = stablehlo.broadcast_in_dim %13, dims = [] : (tensor<f32>) -> tensor<4x5xf32>
    %15 = stablehlo.divide %4, %14 : tensor<4x5xf32>
    %cst_5 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %16 = stablehlo.power %cst_5, %11 : tensor<f32>
    %cst_6 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %17 = stablehlo.subtract %cst_6, %16 : tensor<f32>
    %18 = stablehlo.broadcast_in_dim %17, dims = [] : (tensor<f32>) -> tensor<4x5xf32>
    %19 = stablehlo.divide %10, %18 : tensor<4x5xf32>
    %cst_7 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %20 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<4x5xf32>
    %21 = stablehlo.multiply %20, %15 : tensor<4x5xf32>
    %22 = stablehlo.sqrt %19 : tensor<4x5xf32>
    %cst_8 = stablehlo.constant dense<9.99999993E-9> : tensor<f32>
    %23 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<4x5xf32>
    %24 = stablehlo.add %22, %23 : tensor<4x5xf32>
    %25 = stablehlo.divide %21, %24 : tensor<4x5xf32>
    %26 = stablehlo.subtract %arg0, %25 : tensor<4x5xf32>
    %c = stablehlo.constant dense<1> : tensor<i32>
    %27 = stablehlo.add %arg4, %c : tensor<i32>
    return %26, %4, %10, %27 : tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>, tensor<i32>
  }
}
