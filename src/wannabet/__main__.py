from wannabet.entry import main

main()
